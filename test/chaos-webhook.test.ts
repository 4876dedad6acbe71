/**
 * Chaos: the webhook service killed with SIGKILL while a delivery is in flight to a real
 * receiver, in the middle of a stream of events, then started again. Every event the tenant subscribed to
 * reaches the receiver; what it sees twice is only what the at-least-once contract allows (the one delivery in
 * flight per endpoint, resent with the same event id and body, so it dedupes by event id); no delivery stays
 * pending. The webhook service runs as its own process; the events come over the bus as producers send them.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type pg from 'pg';
import { type Bus } from '@cairn/bus';
import { connectBus } from './support/events.js';
import { newId } from '@cairn/ids';
import { sampleEvent, waitFor } from '@cairn/testing';
import { startReceiver, verifySignature, type Receiver } from '../services/webhook/test/support/receiver.js';
import { startChaosFleet, stopChaosFleet } from './support/chaos.js';
import type { ServiceProcesses } from './support/service-processes.js';
import type { Stack } from './support/stack.js';

/** Events published, one every PUBLISH_GAP_MS; the kill lands on the KILL_AT-th request the receiver gets. */
const EVENTS = 24;
const PUBLISH_GAP_MS = 100;
const KILL_AT = 5;
/** Short, so the lease of the delivery the kill cut (timeout + 30 s) runs out soon. */
const TIMEOUT_MS = 1000;

let stack: Stack;
let tenant: { tenant_id: string; api_key: string };
let admin: pg.Client;
let bus: Bus;
let receiver: Receiver;
let processes: ServiceProcesses;

beforeAll(async () => {
  ({ stack, processes, tenant, admin } = await startChaosFleet(['gateway'], ['webhook'], {
    WEBHOOK_RETRY_SCALE: '0.001',
    WEBHOOK_POLL_INTERVAL_MS: '50',
    WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
  }));
  receiver = await startReceiver();
  bus = await connectBus(stack.env);
}, 240_000);

afterAll(async () => {
  await bus?.close();
  await receiver?.close();
  await stopChaosFleet({ processes, admin, stack });
});

describe('kill -9 the webhook service in the middle of a stream of deliveries', () => {
  it('delivers every subscribed event at least once, resends only the one in flight, byte for byte, and leaves none pending', async () => {
    const created = await stack.request('/v1/webhooks', {
      method: 'POST',
      key: tenant.api_key,
      json: { url: receiver.url, events: ['job.completed'] },
    });
    expect(created.status).toBe(201);
    const { webhook_id: webhookId, secret } = (await created.json()) as { webhook_id: string; secret: string };

    // The kill lands while the receiver holds a delivery: the service dies before it can record the answer.
    let restarted: Promise<unknown> | undefined;
    receiver.behaviour = (_request, nth) => {
      if (nth === KILL_AT && !restarted)
        restarted = processes.kill9Now('webhook').then(async (exit) => {
          expect(exit.signal).toBe('SIGKILL');
          await processes.start('webhook');
        });
      return 200;
    };

    const subscribed: string[] = [];
    const other: string[] = [];
    for (let i = 0; i < EVENTS; i++) {
      const event = sampleEvent('job.completed', tenant.tenant_id, { job_id: newId('job') });
      subscribed.push(event.event_id);
      await bus.publish(event);
      // An event type the endpoint did not subscribe to, in the same stream: never delivered.
      const unsubscribed = sampleEvent('key.expiring', tenant.tenant_id);
      other.push(unsubscribed.event_id);
      await bus.publish(unsubscribed);
      await new Promise((r) => setTimeout(r, PUBLISH_GAP_MS));
    }
    await waitFor('the kill', () => restarted !== undefined, 30_000, 100).catch((error: Error) => {
      throw new Error(`${error.message}: the receiver got ${receiver.received.length}`);
    });
    await restarted;

    const statuses = async () =>
      (
        await admin.query<{ status: string; n: number }>(
          'select status, count(*)::int as n from webhook.deliveries where webhook_id = $1 group by 1',
          [webhookId],
        )
      ).rows;
    // The cut delivery's lease (timeout + 30 s) must run out before it is resent.
    await waitFor(
      'every subscribed event delivered and recorded',
      async () => {
        const seen = new Set(receiver.received.map((r) => String(r.headers['cairn-event-id'])));
        const rows = await statuses();
        return subscribed.every((id) => seen.has(id)) && rows.length === 1 && rows[0]!.status === 'delivered';
      },
      90_000,
      250,
    );
    expect(await statuses()).toEqual([{ status: 'delivered', n: EVENTS }]);

    const byEvent = new Map<string, string[]>();
    for (const r of receiver.received) {
      const id = String(r.headers['cairn-event-id']);
      byEvent.set(id, [...(byEvent.get(id) ?? []), r.body]);
      expect(verifySignature(r.body, r.headers['cairn-signature'], secret)).toBe(true);
    }
    expect([...byEvent.keys()].sort()).toEqual([...subscribed].sort());
    expect(other.filter((id) => byEvent.has(id))).toEqual([]);
    // A resend is the same event, byte for byte: the receiver dedupes by event id.
    for (const bodies of byEvent.values()) expect(new Set(bodies).size).toBe(1);
    // At most one delivery per endpoint is in flight, so the kill can cause at most one duplicate.
    const duplicates = receiver.received.length - byEvent.size;
    expect(duplicates).toBeLessThanOrEqual(1);
    // The resend says it is one: the cut attempt counts, so it carries the next attempt number, and the
    // delivery's log shows the cut one as lost.
    const listed = await stack.request(`/v1/webhooks/${webhookId}/deliveries?limit=100`, { key: tenant.api_key });
    type Listed = {
      event_id: string;
      attempts: number;
      attempt_log: { n: number; status_code: number | null; error: string | null }[];
    };
    const logs = new Map(((await listed.json()) as { data: Listed[] }).data.map((d) => [d.event_id, d]));
    for (const [id, bodies] of byEvent) {
      if (bodies.length < 2) continue;
      const copies = receiver.received.filter((r) => String(r.headers['cairn-event-id']) === id);
      expect(copies.map((r) => r.headers['cairn-attempt'])).toEqual(['1', '2']);
      const log = logs.get(id)!;
      expect(log.attempts).toBe(2);
      expect(
        log.attempt_log.map((a) => ({
          n: a.n,
          status: a.status_code,
          lost: /no outcome recorded/.test(a.error ?? ''),
        })),
      ).toEqual([
        { n: 1, status: null, lost: true },
        { n: 2, status: 200, lost: false },
      ]);
    }
    if (process.env.CHAOS_REPORT) console.log({ received: receiver.received.length, duplicates });
  }, 240_000);
});
