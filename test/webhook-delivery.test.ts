import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { type Bus } from '@cairn/bus';
import { connectBus } from './support/events.js';
import { type EventType } from '@cairn/events';
import { newId } from '@cairn/ids';
import { auditV1, commonV1, webhookV1 } from '@cairn/proto';
import { createClient, type ClientOf } from '@cairn/rpc';
import { startService, type RunningService } from '@cairn/runtime';
import { createSandbox, type Sandbox, sampleEvent } from '@cairn/testing';
import { auditService } from '../services/audit/src/service.js';
import { RETRY_DELAYS_MS } from '../services/webhook/src/domain/events.js';
import { webhookService } from '../services/webhook/src/service.js';
import { startReceiver, verifySignature, waitFor, type Receiver } from '../services/webhook/test/support/receiver.js';

const SCALE = 0.0005; // 15 ms, 150 ms, 900 ms, 3.6 s
let sandbox: Sandbox;
let webhookSvc: RunningService;
let auditSvc: RunningService;
let bus: Bus;
let webhooks: ClientOf<typeof webhookV1.WebhookService>;
let audit: ClientOf<typeof auditV1.AuditService>;
const receivers: Receiver[] = [];

async function startWebhook(extra: NodeJS.ProcessEnv = {}): Promise<void> {
  webhooks?.close();
  webhookSvc = await startService(webhookService({ ...sandbox.env, ...extra }));
  webhooks = createClient(webhookV1.WebhookService, `127.0.0.1:${webhookSvc.grpcPort}`);
}

beforeAll(async () => {
  sandbox = await createSandbox({
    WEBHOOK_RETRY_SCALE: String(SCALE),
    WEBHOOK_POLL_INTERVAL_MS: '50',
    // Long enough that a never-answering receiver is still "in flight" while the live one gets everything.
    WEBHOOK_TIMEOUT_MS: '20000',
    WEBHOOK_SECRET_KEY: randomBytes(32).toString('hex'),
  });
  auditSvc = await startService(auditService(sandbox.env));
  await startWebhook();
  bus = await connectBus(sandbox.env);
  audit = createClient(auditV1.AuditService, `127.0.0.1:${auditSvc.grpcPort}`);
}, 60_000);

afterAll(async () => {
  webhooks?.close();
  audit?.close();
  await bus?.close();
  await webhookSvc?.stop();
  await auditSvc?.stop();
  for (const r of receivers) await r.close();
  await sandbox?.dispose();
});

async function receiver(behaviour?: Parameters<typeof startReceiver>[0]): Promise<Receiver> {
  const r = await startReceiver(behaviour);
  receivers.push(r);
  return r;
}

async function endpoint(tenantId: string, url: string, events: EventType[], payloadFormat = 'a') {
  const created = await webhooks.createEndpoint({ tenantId, url, events, description: 'test', payloadFormat });
  return { webhookId: created.endpoint!.webhookId, secret: created.secret };
}

async function deliveriesOf(tenantId: string, webhookId: string) {
  return (await webhooks.listDeliveries({ tenantId, webhookId, limit: 100 })).deliveries;
}

describe('webhook delivery engine', () => {
  it('delivers variant A, signed with the endpoint secret in both header names', async () => {
    const tenantId = newId('tenant');
    const r = await receiver();
    const { webhookId, secret } = await endpoint(tenantId, r.url, ['job.completed']);
    expect(secret).toMatch(/^whsec_/);
    const event = sampleEvent('job.completed', tenantId, { job_id: newId('job'), asset_id: newId('asset') });
    await bus.publish(event);
    await bus.publish(sampleEvent('job.failed', tenantId, { job_id: newId('job') })); // not subscribed
    const got = await waitFor('delivery', () => r.received[0]);
    expect(JSON.parse(got.body)).toEqual({
      event_id: event.event_id,
      type: 'job.completed',
      created_at: event.created_at,
      data: event.data,
    });
    expect(Object.keys(JSON.parse(got.body) as object)).toEqual(['event_id', 'type', 'created_at', 'data']);
    expect(verifySignature(got.body, got.headers['cairn-signature'], secret)).toBe(true);
    expect(got.headers['x-cairn-signature']).toBe(got.headers['cairn-signature']);
    expect(verifySignature(got.body, got.headers['cairn-signature'], 'whsec_wrong')).toBe(false);
    expect(got.headers['cairn-event-id']).toBe(event.event_id);
    expect(got.headers['cairn-delivery-id']).toMatch(/^dlv_/);
    expect(got.headers['user-agent']).toMatch(/^Cairn-Webhooks\//);
    const [delivery] = await waitFor('delivered', async () => {
      const list = await deliveriesOf(tenantId, webhookId);
      return list[0]?.status === commonV1.DeliveryState.DELIVERED ? list : undefined;
    });
    expect(delivery).toMatchObject({
      eventId: event.event_id,
      eventType: 'job.completed',
      attempts: 1,
      lastStatusCode: 200,
    });
    // Delivered: no next attempt.
    expect(delivery!.nextAttemptAt).toBeUndefined();
    expect(delivery!.attemptLog).toHaveLength(1);
    expect(delivery!.attemptLog[0]).toMatchObject({ n: 1, statusCode: 200 });
    expect(r.received).toHaveLength(1);
  });

  it('delivers variant B to an endpoint that asks for it', async () => {
    const tenantId = newId('tenant');
    const r = await receiver();
    const { secret } = await endpoint(tenantId, r.url, ['manifest.signed'], 'b');
    const event = sampleEvent('manifest.signed', tenantId, {
      manifest_id: newId('manifest'),
      recipe: 'image-genai-v1',
      status: 'signed',
    });
    await bus.publish(event);
    const got = await waitFor('delivery', () => r.received[0]);
    expect(JSON.parse(got.body)).toEqual({ event: 'manifest.signed', occurred_at: event.created_at, data: event.data });
    expect(verifySignature(got.body, got.headers['x-cairn-signature'], secret)).toBe(true);
  });

  it('retries on the scaled schedule and records every attempt', async () => {
    const tenantId = newId('tenant');
    const r = await receiver((_req, nth) => (nth <= 2 ? 500 : 204));
    const { webhookId } = await endpoint(tenantId, r.url, ['billing.quota_warning']);
    await bus.publish(sampleEvent('billing.quota_warning', tenantId, { meter: 'image_sign', used: 80, limit: 100 }));
    const [delivery] = await waitFor('delivered after retries', async () => {
      const list = await deliveriesOf(tenantId, webhookId);
      return list[0]?.status === commonV1.DeliveryState.DELIVERED ? list : undefined;
    });
    expect(r.received).toHaveLength(3);
    expect(delivery!.attempts).toBe(3);
    expect(delivery!.attemptLog.map((a) => a.statusCode)).toEqual([500, 500, 204]);
    // Never earlier than the schedule says (lower bounds only: the machine may always be slower).
    const gaps = r.received.slice(1).map((x, i) => x.at - r.received[i]!.at);
    expect(gaps[0]!).toBeGreaterThanOrEqual(RETRY_DELAYS_MS[1] * SCALE - 5);
    expect(gaps[1]!).toBeGreaterThanOrEqual(RETRY_DELAYS_MS[2] * SCALE - 5);
    // Every attempt carries the same event id, so the receiver can deduplicate.
    expect(new Set(r.received.map((x) => x.headers['cairn-event-id'])).size).toBe(1);
  });

  it('fails after five attempts and the audit log records webhook.failed', async () => {
    const tenantId = newId('tenant');
    const r = await receiver(() => 503);
    const { webhookId } = await endpoint(tenantId, r.url, ['key.expiring']);
    const event = sampleEvent('key.expiring', tenantId, {
      key_id: newId('key'),
      expires_at: new Date(Date.now() + 7 * 86_400_000).toISOString(),
    });
    await bus.publish(event);
    const [delivery] = await waitFor(
      'failed delivery',
      async () => {
        const list = await deliveriesOf(tenantId, webhookId);
        return list[0]?.status === commonV1.DeliveryState.FAILED ? list : undefined;
      },
      30_000,
    );
    expect(delivery!.attempts).toBe(5);
    expect(delivery!.attemptLog.map((a) => a.statusCode)).toEqual([503, 503, 503, 503, 503]);
    expect(delivery!.lastError).toMatch(/HTTP 503/);
    expect(r.received).toHaveLength(5);
    const entries = await waitFor('audit entry', async () => {
      const list = (await audit.listEntries({ tenantId, eventType: 'webhook.failed', limit: 10 })).entries;
      return list.length > 0 ? list : undefined;
    });
    expect(entries).toHaveLength(1);
    expect(JSON.parse(entries[0]!.dataJson)).toMatchObject({
      webhook_id: webhookId,
      delivery_id: delivery!.deliveryId,
      event_id: event.event_id,
      attempts: 5,
      last_status_code: 503,
    });

    // Redeliver starts a fresh cycle; this time the receiver accepts.
    r.behaviour = () => 200;
    const again = await webhooks.redeliver({ tenantId, webhookId, deliveryId: delivery!.deliveryId });
    expect(again.delivery!.status).toBe(commonV1.DeliveryState.PENDING);
    await waitFor('redelivered', async () =>
      (await deliveriesOf(tenantId, webhookId))[0]?.status === commonV1.DeliveryState.DELIVERED ? true : undefined,
    );
    expect(r.received).toHaveLength(6);
  }, 60_000);

  it('a dead receiver does not delay a live one', async () => {
    const tenantId = newId('tenant');
    const dead = await receiver(() => 'hang');
    const live = await receiver();
    const deadEndpoint = await endpoint(tenantId, dead.url, ['job.completed']);
    await endpoint(tenantId, live.url, ['job.completed']);
    for (let i = 0; i < 5; i++) await bus.publish(sampleEvent('job.completed', tenantId, { job_id: newId('job') }));
    await waitFor('all five at the live receiver', () => (live.received.length >= 5 ? true : undefined));
    // The dead receiver got one request (one in flight per endpoint), which has not even timed out yet.
    expect(dead.received).toHaveLength(1);
    const stuck = await deliveriesOf(tenantId, deadEndpoint.webhookId);
    expect(stuck).toHaveLength(5);
    expect(stuck.every((d) => d.attempts === 0)).toBe(true);
    expect(stuck.filter((d) => d.status === commonV1.DeliveryState.DELIVERING)).toHaveLength(1);
  });

  it('loses nothing across a restart in the middle of the schedule', async () => {
    const tenantId = newId('tenant');
    let firstId = '';
    // The first event is refused three times (so the service stops between attempts 2 and 3), the others once.
    const r = await receiver((req) => {
      const n = r.received.filter((x) => x.headers['cairn-event-id'] === req.headers['cairn-event-id']).length;
      return n <= (req.headers['cairn-event-id'] === firstId ? 3 : 1) ? 500 : 200;
    });
    const { webhookId } = await endpoint(tenantId, r.url, ['anchor.confirmed']);
    const first = sampleEvent('anchor.confirmed', tenantId, { batch_id: newId('batch') });
    firstId = first.event_id;
    await bus.publish(first);
    await waitFor('second attempt', () => r.received[1]);
    await webhookSvc.stop();
    // While the service is down: more events (they wait in JetStream) and the retry comes due (in Postgres).
    const more = [0, 1, 2].map(() => sampleEvent('anchor.confirmed', tenantId, { batch_id: newId('batch') }));
    for (const e of more) await bus.publish(e);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await startWebhook();
    const all = [first, ...more].map((e) => e.event_id);
    const list = await waitFor('everything delivered', async () => {
      const l = await deliveriesOf(tenantId, webhookId);
      return l.length === 4 && l.every((d) => d.status === commonV1.DeliveryState.DELIVERED) ? l : undefined;
    });
    expect(list.map((d) => d.eventId).sort()).toEqual([...all].sort());
    // Each event was accepted exactly once (a 2xx is final), after its refusals; the schedule went on where it was.
    for (const id of all)
      expect(r.received.filter((x) => x.headers['cairn-event-id'] === id)).toHaveLength(id === firstId ? 4 : 2);
    expect(list.find((d) => d.eventId === firstId)!.attemptLog.map((a) => a.statusCode)).toEqual([500, 500, 500, 200]);
  });

  it('refuses internal receivers in production, at creation and at connect time', async () => {
    const tenantId = newId('tenant');
    const r = await receiver();
    const { webhookId } = await endpoint(tenantId, r.url, ['certificate.expiring']);
    await webhookSvc.stop();
    await startWebhook({ CAIRN_ENV: 'production' });
    for (const url of [
      'http://127.0.0.1:8080/hook',
      'https://127.0.0.1/hook',
      'https://10.1.2.3/hook',
      'https://169.254.169.254/',
      'https://[::1]/hook',
    ]) {
      await expect(
        webhooks.createEndpoint({ tenantId, url, events: ['job.completed'], description: '', payloadFormat: '' }),
      ).rejects.toMatchObject({ code: 'cairn.webhook.invalid_url' });
    }
    // An endpoint created earlier in development: production refuses to connect to it.
    await bus.publish(
      sampleEvent('certificate.expiring', tenantId, { serial_hex: '01', not_after: new Date().toISOString() }),
    );
    const [delivery] = await waitFor('refused attempt', async () => {
      const list = await deliveriesOf(tenantId, webhookId);
      return list[0] && list[0].attempts >= 1 ? list : undefined;
    });
    expect(delivery!.attemptLog[0]!.statusCode).toBe(0);
    expect(delivery!.lastError).toMatch(/http|loopback|refused/i);
    expect(r.received).toHaveLength(0);
  });
});
