import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { type Bus } from '@cairn/bus';
import { connectBus } from '../../../test/support/events.js';
import { newId } from '@cairn/ids';
import { auditV1 } from '@cairn/proto';
import { createClient } from '@cairn/rpc';
import { startService, type RunningService } from '@cairn/runtime';
import { createSandbox, type Sandbox, sampleEvent } from '@cairn/testing';
import { entryHash, type ChainedFields } from '../src/domain/chain.js';
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
  bus = await connectBus(sandbox.env);
  audit = auditClient(`127.0.0.1:${service.grpcPort}`);
  admin = await sandbox.adminClient();
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
  await Promise.all(
    Array.from({ length: n }, () =>
      bus.publish(sampleEvent('asset.signed', tenantId, { asset_id: newId('asset'), 'billing.meter': 'image_sign' })),
    ),
  );
  const deadline = Date.now() + 15_000;
  while ((await audit.listEntries({ tenantId, limit: 1000 })).entries.length < n) {
    if (Date.now() > deadline) throw new Error('timed out waiting for entries');
    await new Promise((r) => setTimeout(r, 50));
  }
}

interface EntryRow extends ChainedFields {
  prevHash: string;
  hash: string;
}

async function rowOf(tenantId: string, seq: number): Promise<EntryRow> {
  const { rows } = await admin.query<{
    entry_id: string;
    seq: string;
    event_id: string;
    event_type: string;
    occurred_at: Date;
    data: unknown;
    prev_hash: string;
    hash: string;
  }>(
    'select entry_id, seq, event_id, event_type, occurred_at, data, prev_hash, hash from audit.entries where tenant_id = $1 and seq = $2',
    [tenantId, seq],
  );
  const row = rows[0];
  if (!row) throw new Error(`no entry ${seq}`);
  return {
    tenantId,
    seq: Number(row.seq),
    entryId: row.entry_id,
    eventId: row.event_id,
    eventType: row.event_type,
    occurredAt: row.occurred_at,
    data: row.data,
    prevHash: row.prev_hash,
    hash: row.hash,
  };
}

/** A forger with write access to the table: changes entry `seq` and recomputes its own hash so it checks out alone. */
async function rewrite(tenantId: string, seq: number, change: (row: EntryRow) => EntryRow): Promise<void> {
  const forged = change(await rowOf(tenantId, seq));
  const hash = entryHash(forged, forged.prevHash);
  await admin.query('update audit.entries set seq = $3, data = $4, hash = $5 where tenant_id = $1 and seq = $2', [
    tenantId,
    seq,
    forged.seq,
    JSON.stringify(forged.data),
    hash,
  ]);
}

describe('audit hash chain', () => {
  it('chains concurrent appends without gaps and detects a deleted entry', async () => {
    const tenantId = newId('tenant');
    await record(tenantId, 30);
    const { entries } = await audit.listEntries({ tenantId, limit: 1000 });
    expect(entries.map((e) => Number(e.seq))).toEqual(Array.from({ length: 30 }, (_, i) => 30 - i));
    expect(entries[29]!.prevHash).toBe('0'.repeat(64));
    expect(entries[0]!.prevHash).toBe(entries[1]!.hash);
    expect(await audit.verifyChain({ tenantId })).toMatchObject({
      intact: true,
      entriesChecked: 30n,
      headHash: entries[0]!.hash,
    });

    await admin.query('delete from audit.entries where tenant_id = $1 and seq = 12', [tenantId]);
    const verdict = await audit.verifyChain({ tenantId });
    expect(verdict).toMatchObject({ intact: false, firstBrokenSeq: 13n, entriesChecked: 11n });
    expect(verdict.reason).toMatch(/missing/);
  });

  /** A forgery of a fresh chain of 5 entries, and where verification then finds the chain broken. */
  interface Forgery {
    readonly what: string;
    readonly forge: (tenantId: string) => Promise<void>;
    /** firstBrokenSeq, entriesChecked, and the reason given. */
    readonly broken: readonly [bigint, bigint, RegExp];
  }

  it.each<Forgery>([
    {
      what: 'an entry whose own hash was overwritten with garbage',
      forge: async (tenantId) => {
        await admin.query(`update audit.entries set hash = repeat('a', 64) where tenant_id = $1 and seq = 2`, [
          tenantId,
        ]);
      },
      broken: [2n, 1n, /hash mismatch/],
    },
    {
      what: 'an edited entry whose own hash was recomputed, through the next entry’s prev_hash link',
      forge: async (tenantId) => {
        // The forger rewrites what entry 2 says and gives it a hash consistent with its new content and its
        // prev_hash: entry 2 alone checks out, so only the link from entry 3 can catch it.
        await rewrite(tenantId, 2, (row) => ({
          ...row,
          data: { ...(row.data as Record<string, unknown>), asset_id: 'asset_forged' },
        }));
        const forged = await rowOf(tenantId, 2);
        expect(forged.data).toMatchObject({ asset_id: 'asset_forged' });
        expect(entryHash(forged, forged.prevHash)).toBe(forged.hash);
      },
      broken: [3n, 2n, /prev_hash/],
    },
    {
      what: 'a deleted entry whose gap was closed by renumbering and re-hashing the entries after it',
      forge: async (tenantId) => {
        await admin.query('delete from audit.entries where tenant_id = $1 and seq = 3', [tenantId]);
        // Entries 4 and 5 move down to 3 and 4 with hashes recomputed over their new seq: no gap, each self-consistent.
        for (const seq of [4, 5]) await rewrite(tenantId, seq, (row) => ({ ...row, seq: seq - 1 }));
        const { entries } = await audit.listEntries({ tenantId, limit: 10 });
        expect(entries.map((e) => Number(e.seq))).toEqual([4, 3, 2, 1]);
      },
      broken: [3n, 2n, /prev_hash/],
    },
    {
      what: 'a reordered pair of entries, each re-hashed at its new place',
      forge: async (tenantId) => {
        const [second, third] = [await rowOf(tenantId, 2), await rowOf(tenantId, 3)];
        // Swap 2 and 3 (through a free seq, the (tenant, seq) index is unique), each keeping its prev_hash.
        await rewrite(tenantId, 2, (row) => ({ ...row, seq: 100 }));
        await rewrite(tenantId, 3, (row) => ({ ...row, seq: 2 }));
        await rewrite(tenantId, 100, (row) => ({ ...row, seq: 3 }));
        expect((await rowOf(tenantId, 2)).entryId).toBe(third.entryId);
        expect((await rowOf(tenantId, 3)).entryId).toBe(second.entryId);
      },
      broken: [2n, 1n, /prev_hash/],
    },
  ])('detects $what', async ({ forge, broken: [firstBrokenSeq, entriesChecked, reason] }) => {
    const tenantId = newId('tenant');
    await record(tenantId, 5);
    await forge(tenantId);
    const verdict = await audit.verifyChain({ tenantId });
    expect(verdict).toMatchObject({ intact: false, firstBrokenSeq, entriesChecked });
    expect(verdict.reason).toMatch(reason);
  });

  it('a retention purge keeps the remaining chain verifiable from its checkpoint', async () => {
    const tenantId = newId('tenant');
    await record(tenantId, 6);
    await admin.query(
      `update audit.entries set recorded_at = now() - interval '40 days' where tenant_id = $1 and seq <= 4`,
      [tenantId],
    );
    const purged = await audit.purgeExpired({ tenantId, retentionDays: 30 });
    expect(purged).toMatchObject({ purged: 4, checkpointSeq: 4n });
    expect(await audit.verifyChain({ tenantId })).toMatchObject({
      intact: true,
      entriesChecked: 2n,
      checkpointSeq: 4n,
    });
    // The next append chains on the survivors.
    await bus.publish(sampleEvent('webhook.failed', tenantId));
    while ((await audit.listEntries({ tenantId, limit: 10 })).entries.length < 3)
      await new Promise((r) => setTimeout(r, 50));
    expect((await audit.listEntries({ tenantId, limit: 1 })).entries[0]!.seq).toBe(7n);
    expect(await audit.verifyChain({ tenantId })).toMatchObject({
      intact: true,
      entriesChecked: 3n,
      checkpointSeq: 4n,
    });
  });
});
