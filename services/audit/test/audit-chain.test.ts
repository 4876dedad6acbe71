import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { Bus, newEvent } from '@cairn/bus';
import { newId } from '@cairn/ids';
import { auditV1 } from '@cairn/proto';
import { createClient } from '@cairn/rpc';
import { startService, type RunningService } from '@cairn/runtime';
import { createSandbox, PG_ADMIN_URL, type Sandbox } from '@cairn/testing';
import { auditService } from '../src/service.js';

const auditClient = (address: string) => createClient(auditV1.AuditService, address);
let sandbox: Sandbox;
let service: RunningService;
let bus: Bus;
let audit: ReturnType<typeof auditClient>;
let admin: pg.Client;

beforeAll(async () => {
  sandbox = await createSandbox();
  service = await startService(auditService(sandbox.env));
  bus = await Bus.connect({ url: String(sandbox.env.NATS_URL), stream: String(sandbox.env.NATS_STREAM), subjectPrefix: String(sandbox.env.NATS_SUBJECT_PREFIX) });
  audit = auditClient(`127.0.0.1:${service.grpcPort}`);
  admin = new pg.Client({ connectionString: PG_ADMIN_URL.replace(/\/[^/]*$/, `/${sandbox.databaseName}`) });
  await admin.connect();
});

afterAll(async () => {
  await admin.end();
  audit.close();
  await bus.close();
  await service.stop();
  await sandbox.dispose();
});

async function record(tenantId: string, n: number): Promise<void> {
  // Published concurrently: the per-tenant advisory lock must still give a gap-free chain.
  await Promise.all(Array.from({ length: n }, (_, i) => bus.publish(newEvent('asset.signed', tenantId, { asset_id: newId('asset'), i, 'billing.meter': 'image_sign' }))));
  const deadline = Date.now() + 15_000;
  while ((await audit.listEntries({ tenantId, limit: 1000 })).entries.length < n) {
    if (Date.now() > deadline) throw new Error('timed out waiting for entries');
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('audit hash chain', () => {
  it('chains concurrent appends without gaps and detects a deleted entry', async () => {
    const tenantId = newId('tenant');
    await record(tenantId, 30);
    const { entries } = await audit.listEntries({ tenantId, limit: 1000 });
    expect(entries.map((e) => Number(e.seq))).toEqual(Array.from({ length: 30 }, (_, i) => 30 - i));
    expect(entries[29]!.prevHash).toBe('0'.repeat(64));
    expect(entries[0]!.prevHash).toBe(entries[1]!.hash);
    expect(await audit.verifyChain({ tenantId })).toMatchObject({ intact: true, entriesChecked: 30n, headHash: entries[0]!.hash });

    await admin.query('delete from audit.entries where tenant_id = $1 and seq = 12', [tenantId]);
    const verdict = await audit.verifyChain({ tenantId });
    expect(verdict).toMatchObject({ intact: false, firstBrokenSeq: 13n, entriesChecked: 11n });
    expect(verdict.reason).toMatch(/missing/);
  });

  it('detects a re-hashed forgery through the next entry', async () => {
    const tenantId = newId('tenant');
    await record(tenantId, 5);
    // Forging entry 2 and recomputing its own hash still breaks entry 3's prev_hash link.
    await admin.query(`update audit.entries set hash = repeat('a', 64) where tenant_id = $1 and seq = 2`, [tenantId]);
    expect(await audit.verifyChain({ tenantId })).toMatchObject({ intact: false, firstBrokenSeq: 2n });
  });

  it('a retention purge keeps the remaining chain verifiable from its checkpoint', async () => {
    const tenantId = newId('tenant');
    await record(tenantId, 6);
    await admin.query(`update audit.entries set recorded_at = now() - interval '40 days' where tenant_id = $1 and seq <= 4`, [tenantId]);
    const purged = await audit.purgeExpired({ tenantId, retentionDays: 30 });
    expect(purged).toMatchObject({ purged: 4, checkpointSeq: 4n });
    expect(await audit.verifyChain({ tenantId })).toMatchObject({ intact: true, entriesChecked: 2n, checkpointSeq: 4n });
    // The next append chains on the survivors.
    await bus.publish(newEvent('webhook.failed', tenantId, { endpoint_id: 'wh_x' }));
    while ((await audit.listEntries({ tenantId, limit: 10 })).entries.length < 3) await new Promise((r) => setTimeout(r, 50));
    expect((await audit.listEntries({ tenantId, limit: 1 })).entries[0]!.seq).toBe(7n);
    expect(await audit.verifyChain({ tenantId })).toMatchObject({ intact: true, entriesChecked: 3n, checkpointSeq: 4n });
  });
});
