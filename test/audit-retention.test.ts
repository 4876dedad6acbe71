import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { type Bus } from '@cairn/bus';
import { connectBus } from './support/events.js';
import { newId } from '@cairn/ids';
import { auditV1 } from '@cairn/proto';
import { createClient, type ClientOf } from '@cairn/rpc';
import { waitFor, sampleEvent } from '@cairn/testing';
import { onboard, startStack, type Stack } from './support/stack.js';

// The scheduled retention purge: the audit service asks the gateway for each tenant's retention and purges on its own.
let stack: Stack;
let bus: Bus;
let admin: pg.Client;
let audit: ClientOf<typeof auditV1.AuditService>;

beforeAll(async () => {
  stack = await startStack(['gateway', 'audit'], { AUDIT_PURGE_INTERVAL_MS: '300' });
  bus = await connectBus(stack.env);
  admin = await stack.sandbox.adminClient();
  audit = createClient(auditV1.AuditService, String(stack.env.AUDIT_GRPC_ADDR));
}, 120_000);

afterAll(async () => {
  audit?.close();
  await admin?.end();
  await bus?.close();
  await stack?.stop();
});

describe('scheduled audit retention', () => {
  it('purges entries older than the tenant’s retention and leaves a verifiable chain', async () => {
    const tenant = await onboard(stack, 'free');
    const tenantId = tenant.tenant_id;
    for (let i = 0; i < 6; i++)
      await bus.publish(
        sampleEvent('asset.signed', tenantId, { asset_id: newId('asset'), 'billing.meter': 'image_sign' }),
      );
    // Onboarding records tenant.created and key.created (through the gateway's outbox) besides the six events
    // published here: wait for all eight, or the expected counts below would be taken too early.
    const before = await waitFor('entries', async () => {
      const r = await audit.listEntries({ tenantId, limit: 1000 });
      const types = r.entries.map((e) => e.eventType);
      const complete =
        types.filter((t) => t === 'asset.signed').length === 6 &&
        types.includes('tenant.created') &&
        types.includes('key.created');
      return complete ? r : undefined;
    });
    const total = before.entries.length;
    // Free plan: 30 days. Entries 1..4 become 40 days old, the rest stay recent.
    await admin.query(
      `update audit.entries set recorded_at = now() - interval '40 days', occurred_at = now() - interval '40 days' where tenant_id = $1 and seq <= 4`,
      [tenantId],
    );
    // Another tenant whose entries are all recent keeps every one.
    const other = newId('tenant');
    await bus.publish(sampleEvent('webhook.failed', other));

    const verdict = await waitFor('the scheduled purge', async () => {
      const v = await audit.verifyChain({ tenantId });
      return v.checkpointSeq === 4n ? v : undefined;
    });
    expect(verdict).toMatchObject({ intact: true, checkpointSeq: 4n, entriesChecked: BigInt(total - 4) });
    const after = await audit.listEntries({ tenantId, limit: 1000 });
    expect(after.entries.map((e) => Number(e.seq)).sort((a, b) => a - b)).toEqual(
      Array.from({ length: total - 4 }, (_, i) => i + 5),
    );
    await waitFor('the other tenant’s entry', async () => {
      const r = await audit.listEntries({ tenantId: other, limit: 10 });
      return r.entries.length === 1 ? r : undefined;
    });
    expect(await audit.verifyChain({ tenantId: other })).toMatchObject({ intact: true, checkpointSeq: 0n });
  });
});
