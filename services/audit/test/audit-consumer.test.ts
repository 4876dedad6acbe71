import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type Bus } from '@cairn/bus';
import { connectBus } from '../../../test/support/events.js';
import { type AnyEvent } from '@cairn/events';
import { newId } from '@cairn/ids';
import { auditV1 } from '@cairn/proto';
import { createClient, type ClientOf } from '@cairn/rpc';
import { startService, type RunningService } from '@cairn/runtime';
import { createSandbox, type Sandbox, waitFor, sampleEvent } from '@cairn/testing';
import { AUDIT_LOG_CONSUMER } from '../src/events.js';
import { auditService } from '../src/service.js';

let sandbox: Sandbox;
let service: RunningService;
let bus: Bus;
let audit: ClientOf<typeof auditV1.AuditService>;

beforeAll(async () => {
  sandbox = await createSandbox();
  service = await startService(auditService(sandbox.env));
  bus = await connectBus(sandbox.env);
  audit = createClient(auditV1.AuditService, `127.0.0.1:${service.grpcPort}`);
});

afterAll(async () => {
  audit.close();
  await bus.close();
  await service.stop();
  await sandbox.dispose();
});

/** Resolves once the audit consumer has acknowledged everything in the stream. */
async function consumerCaughtUp(): Promise<void> {
  const lastSeq = (await bus.jsm.streams.info(String(sandbox.env.NATS_STREAM))).state.last_seq;
  await waitFor('consumer to catch up', async () => {
    const info = await bus.jsm.consumers.info(String(sandbox.env.NATS_STREAM), AUDIT_LOG_CONSUMER);
    return info.ack_floor.stream_seq >= lastSeq && info.num_ack_pending === 0 ? true : undefined;
  });
}

async function entriesOf(tenantId: string, eventType = '') {
  return (await audit.listEntries({ tenantId, eventType, limit: 100 })).entries;
}

function publishCopy(event: AnyEvent): Promise<void> {
  // A different message id gets past JetStream's duplicate window: only the consumer's dedupe can stop it.
  return bus.publishRaw(bus.subject(event.type), JSON.stringify(event), `${event.event_id}-copy-${Date.now()}`, {});
}

describe('audit log consumer', () => {
  it('records a published event once, even when the same event arrives again', async () => {
    const tenantId = newId('tenant');
    const event = sampleEvent('key.created', tenantId, { key_id: newId('key'), scope: 'sign' });
    await bus.publish(event);
    const recorded = await waitFor('entry', async () =>
      (await entriesOf(tenantId)).length === 1 ? entriesOf(tenantId) : undefined,
    );
    expect(recorded[0]).toMatchObject({ eventId: event.event_id, eventType: 'key.created', tenantId });
    expect(JSON.parse(recorded[0]!.dataJson)).toEqual(event.data);

    await publishCopy(event);
    await publishCopy(event);
    await consumerCaughtUp();
    expect(await entriesOf(tenantId)).toHaveLength(1);
  });

  it('applies an event exactly once when its first delivery fails and it is redelivered', async () => {
    const tenantId = newId('tenant');
    const event = sampleEvent('settings.changed', tenantId, { changes: { spending_cap_usd: { from: null, to: 10 } } });
    const admin = await sandbox.adminClient();
    try {
      // The service's role loses INSERT on the log: the handler fails, its transaction (and event claim) rolls back.
      await admin.query('revoke insert on audit.entries from cairn');
      const failed = () =>
        service.context.metrics.eventsConsumed
          .get()
          .then((m) => m.values.filter((v) => v.labels.outcome === 'failed').reduce((n, v) => n + v.value, 0));
      const failuresBefore = await failed();
      await bus.publish(event);
      await waitFor('a failed delivery', async () => ((await failed()) > failuresBefore ? true : undefined));
      expect(await entriesOf(tenantId)).toHaveLength(0);
      await admin.query('grant insert on audit.entries to cairn');
    } finally {
      // Restores the grant if the test failed before doing so; the happy path granted it already.
      await admin.query('grant insert on audit.entries to cairn').catch(() => undefined);
      await admin.end();
    }
    const recorded = await waitFor(
      'redelivered entry',
      async () => ((await entriesOf(tenantId)).length > 0 ? entriesOf(tenantId) : undefined),
      15_000,
    );
    await consumerCaughtUp();
    expect(recorded).toHaveLength(1);
    expect(await entriesOf(tenantId)).toHaveLength(1);
  });

  it('keeps tenants apart and filters by event type', async () => {
    const a = newId('tenant');
    const b = newId('tenant');
    await bus.publish(sampleEvent('key.created', a, { key_id: 'k1' }));
    await bus.publish(sampleEvent('key.revoked', a, { key_id: 'k1' }));
    await bus.publish(sampleEvent('key.created', b, { key_id: 'k2' }));
    await waitFor('entries', async () =>
      (await entriesOf(a)).length === 2 && (await entriesOf(b)).length === 1 ? true : undefined,
    );
    expect((await entriesOf(a, 'key.revoked')).map((e) => e.eventType)).toEqual(['key.revoked']);
    expect((await entriesOf(b)).every((e) => e.tenantId === b)).toBe(true);
  });

  it('does not record events outside the audited set', async () => {
    const tenantId = newId('tenant');
    await bus.publish(sampleEvent('job.completed', tenantId, { job_id: newId('job') }));
    await consumerCaughtUp();
    expect(await entriesOf(tenantId)).toHaveLength(0);
  });
});
