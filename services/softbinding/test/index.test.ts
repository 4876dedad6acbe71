import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { sql } from 'drizzle-orm';
import { createDb, createPool, migrateService, withTenant, type Database } from '@cairn/db';
import { createSandbox, type Sandbox } from '@cairn/testing';
import type pg from 'pg';
import { FingerprintIndex, neighbours, type NewFingerprint } from '../src/store/fingerprints.js';
import { HammingIndex } from '../src/domain/hamming-index.js';
import { hamming, PDQ_ALG } from '../src/domain/pdq.js';
import { LOOKUP_RADIUS } from '../src/domain/threshold.js';
import { migrationsFolder } from '../src/service.js';

let sandbox: Sandbox;
let pool: pg.Pool;
let db: Database;
let index: FingerprintIndex;
/** Loaded from Postgres after every row was added (the service's start), where `index` held them as they came. */
let loaded: FingerprintIndex;
const LIMITS = { maxSlots: 100_000, maxSlotsPerTenant: 100_000 };
const TENANTS = ['t_A', 't_B'];
const stored: Array<{ tenantId: string; assetId: string; bits: Uint8Array }> = [];

/** A copy of `bits` with `flips` distinct bits flipped. */
function near(bits: Uint8Array, flips: number): Uint8Array {
  const out = Uint8Array.from(bits);
  const chosen = new Set<number>();
  while (chosen.size < flips) chosen.add(randomBytes(1)[0]!);
  for (const b of chosen) out[b >> 3] = out[b >> 3]! ^ (0x80 >> (b & 7));
  return out;
}

const row = (tenantId: string, i: number, bits: Uint8Array): NewFingerprint => ({
  tenantId,
  assetId: `a_${tenantId}_${i}`,
  manifestId: `m_${i}`,
  manifestUri: `https://cairn.test/v1/manifests/m_${i}`,
  verifierUrl: `https://cairn.test/v/a_${i}`,
  alg: PDQ_ALG,
  variant: 'full',
  bits,
  quality: 100,
});

beforeAll(async () => {
  sandbox = await createSandbox();
  pool = createPool(String(sandbox.env.DATABASE_URL), 4);
  await migrateService(pool, 'softbinding', migrationsFolder);
  db = createDb(pool);
  index = new FingerprintIndex(db, LIMITS);
  await index.load();
  // ~3000 hashes: random ones, and clusters around a few centres at distances 0..40 so radius searches hit.
  const centres = Array.from({ length: 20 }, () => new Uint8Array(randomBytes(32)));
  for (const tenantId of TENANTS) {
    const rows: NewFingerprint[] = [];
    for (let i = 0; i < 1500; i++) {
      const bits = i < 600 ? near(centres[i % centres.length]!, i % 41) : new Uint8Array(randomBytes(32));
      rows.push(row(tenantId, i, bits));
      stored.push({ tenantId, assetId: `a_${tenantId}_${i}`, bits });
    }
    await withTenant(db, tenantId, async (tx) => {
      for (let i = 0; i < rows.length; i += 500) await index.add(tx, rows.slice(i, i + 500));
    });
  }
  loaded = new FingerprintIndex(db, LIMITS);
  await loaded.load();
}, 120_000);

afterAll(async () => {
  await pool?.end();
  await sandbox?.dispose();
});

describe('multi-index hashing, in memory and over Postgres', () => {
  it('neighbours enumerates the Hamming ball of a 16-bit chunk', () => {
    expect(neighbours(0, 0)).toEqual([0]);
    expect(new Set(neighbours(0xabcd, 1)).size).toBe(17);
    expect(new Set(neighbours(0xabcd, 2)).size).toBe(137);
  });

  it('the in-memory index finds what brute force finds, its rows sorted, chained or both', () => {
    const memory = new HammingIndex({ maxSlots: 10_000, maxSlotsPerTenant: 10_000 });
    const held: Array<{ id: number; tenantId: string; bits: Uint8Array }> = [];
    const centre = new Uint8Array(randomBytes(32));
    const hold = (count: number) => {
      for (let i = 0; i < count; i++) {
        const entry = {
          id: held.length + 1,
          tenantId: TENANTS[i % 2]!,
          bits: i % 3 === 0 ? near(centre, i % 45) : new Uint8Array(randomBytes(32)),
        };
        held.push(entry);
        memory.add({ ...entry, alg: PDQ_ALG });
      }
    };
    const expectBrute = () => {
      for (const query of [centre, near(centre, 9), near(centre, 20), new Uint8Array(randomBytes(32))])
        for (const radius of [0, 15, LOOKUP_RADIUS]) {
          const got = memory
            .search(query, radius, { tenantId: 't_A', alg: PDQ_ALG })
            .map((h) => `${h.id}:${h.distance}`)
            .sort();
          const brute = held
            .filter((h) => h.tenantId === 't_A' && hamming(h.bits, query) <= radius)
            .map((h) => `${h.id}:${hamming(h.bits, query)}`)
            .sort();
          expect(got).toEqual(brute);
        }
    };
    hold(3000);
    expectBrute();
    // Half the chunks sorted, then more rows chained behind every chunk, then all sorted.
    for (let c = 0; c < 8; c++) memory.compact(c);
    hold(5000);
    expect(memory.unsorted).toBe(8000);
    expectBrute();
    memory.compact();
    expect(memory.unsorted).toBe(0);
    expectBrute();
    expect(memory.search(centre, LOOKUP_RADIUS, { tenantId: 't_A', alg: 'other' })).toEqual([]);
  });

  it('returns the same matches as a sequential scan (and as brute force in JS), for random queries', async () => {
    const centresHit = stored.filter((_, i) => i % 50 === 0);
    let nonEmpty = 0;
    for (let q = 0; q < 60; q++) {
      const base = centresHit[q % centresHit.length]!;
      const query = q % 3 === 2 ? new Uint8Array(randomBytes(32)) : near(base.bits, q % 25);
      for (const radius of [7, 15, LOOKUP_RADIUS]) {
        const scope = { tenantId: TENANTS[q % 2]! };
        const viaIndex = await index.search(scope, query, radius, 10_000);
        const viaScan = await index.scan(scope, query, radius, 10_000);
        expect(viaIndex).toEqual(viaScan);
        expect(await loaded.search(scope, query, radius, 10_000)).toEqual(viaScan);
        expect(await index.searchPostgres(scope, query, radius, 10_000)).toEqual(viaScan);
        const brute = stored
          .filter((s) => s.tenantId === scope.tenantId && hamming(s.bits, query) <= radius)
          .map((s) => s.assetId)
          .sort();
        expect(viaIndex.map((m) => m.asset_id).sort()).toEqual(brute);
        if (viaIndex.length > 0) nonEmpty++;
      }
    }
    expect(nonEmpty).toBeGreaterThan(20);
  }, 120_000);

  it('a tenant sees only its own matches; the public sees every tenant but only public fields', async () => {
    const target = stored.find((s) => s.tenantId === 't_B')!;
    expect(await index.search({ tenantId: 't_A' }, target.bits, LOOKUP_RADIUS)).not.toContainEqual(
      expect.objectContaining({ asset_id: target.assetId }),
    );
    const own = await index.search({ tenantId: 't_B' }, target.bits, LOOKUP_RADIUS);
    expect(own[0]).toMatchObject({ asset_id: target.assetId, distance: 0, similarity: 1, alg: PDQ_ALG });
    const pub = await index.search('public', target.bits, LOOKUP_RADIUS);
    expect(pub.map((m) => m.asset_id)).toContain(target.assetId);
    for (const m of pub)
      expect(Object.keys(m).sort()).toEqual([
        'alg',
        'asset_id',
        'distance',
        'manifest_uri',
        'similarity',
        'verifier_url',
      ]);
    // No tenant and no public flag: RLS (forced on the owner) shows nothing.
    const bare = await db.execute<{ n: number }>(sql`select count(*)::int as n from softbinding.fingerprints`);
    expect(bare.rows[0]!.n).toBe(0);
  });

  it('indexing is idempotent and the public flag does not open writes', async () => {
    const first = stored[0]!;
    await withTenant(db, first.tenantId, (tx) => index.add(tx, [row(first.tenantId, 0, first.bits)]));
    const n = await withTenant(db, first.tenantId, (tx) =>
      tx.execute<{ n: number }>(sql`select count(*)::int as n from softbinding.fingerprints`),
    );
    expect(n.rows[0]!.n).toBe(1500);
    await expect(
      db.transaction(async (tx) => {
        await tx.execute(sql`select set_config('cairn.softbinding_public', 'on', true)`);
        await index.add(tx, [row('t_C', 1, first.bits)]);
      }),
    ).rejects.toThrow();
  });

  it('holds every row in memory, and finds what it does not hold (a tenant beyond its bound) through Postgres', async () => {
    expect(index.heldRows).toBe(3000);
    expect(loaded.heldRows).toBe(3000);
    const bounded = new FingerprintIndex(db, { maxSlots: 100_000, maxSlotsPerTenant: 1000 });
    await bounded.load();
    expect(bounded.heldRows).toBe(2000);
    for (const target of [stored[1200]!, stored[2900]!]) {
      const scope = { tenantId: target.tenantId };
      const found = await bounded.search(scope, target.bits, LOOKUP_RADIUS);
      expect(found[0]).toMatchObject({ asset_id: target.assetId, distance: 0 });
      expect(found).toEqual(await index.scan(scope, target.bits, LOOKUP_RADIUS));
      expect(await bounded.search('public', target.bits, LOOKUP_RADIUS)).toEqual(
        await index.scan('public', target.bits, LOOKUP_RADIUS),
      );
    }
  });

  it('finds rows another process added once it catches up, each held once', async () => {
    const writer = new FingerprintIndex(db);
    const bits = new Uint8Array(randomBytes(32));
    await withTenant(db, 't_A', (tx) => writer.add(tx, [row('t_A', 9000, bits)]));
    await loaded.catchUp();
    expect(loaded.heldRows).toBe(3001);
    expect(await loaded.search({ tenantId: 't_A' }, bits, LOOKUP_RADIUS)).toEqual([
      expect.objectContaining({ asset_id: 'a_t_A_9000', distance: 0 }),
    ]);
    expect(await loaded.search({ tenantId: 't_B' }, bits, LOOKUP_RADIUS)).toEqual([]);
    // Its own rows are held at once and not again by the catch-up.
    const own = near(bits, 3);
    await withTenant(db, 't_B', (tx) => loaded.add(tx, [row('t_B', 9001, own)]));
    await loaded.catchUp();
    expect(loaded.heldRows).toBe(3002);
    expect(await loaded.search({ tenantId: 't_B' }, own, LOOKUP_RADIUS)).toEqual([
      expect.objectContaining({ asset_id: 'a_t_B_9001', distance: 0 }),
    ]);
  });

  it('catches up in commit order: a row committed after a later-numbered one is still found', async () => {
    const writer = new FingerprintIndex(db);
    const early = new Uint8Array(randomBytes(32));
    const late = new Uint8Array(randomBytes(32));
    const before = loaded.heldRows;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let inserted!: () => void;
    const insertedEarly = new Promise<void>((resolve) => (inserted = resolve));
    // The first insert takes the lower id and stays uncommitted while the second commits.
    const slow = withTenant(db, 't_A', async (tx) => {
      await writer.add(tx, [row('t_A', 9100, early)]);
      inserted();
      await gate;
    });
    await insertedEarly;
    await withTenant(db, 't_A', (tx) => writer.add(tx, [row('t_A', 9101, late)]));
    await loaded.catchUp();
    expect(await loaded.search({ tenantId: 't_A' }, late, LOOKUP_RADIUS)).toEqual([
      expect.objectContaining({ asset_id: 'a_t_A_9101', distance: 0 }),
    ]);
    expect(loaded.heldRows).toBe(before + 1);
    release();
    await slow;
    const ids = await withTenant(db, 't_A', (tx) =>
      tx.execute<{ asset_id: string; id: string }>(
        sql`select asset_id, id from softbinding.fingerprints where asset_id in ('a_t_A_9100', 'a_t_A_9101') order by id`,
      ),
    );
    expect(ids.rows.map((r) => r.asset_id)).toEqual(['a_t_A_9100', 'a_t_A_9101']);
    await loaded.catchUp();
    await loaded.catchUp();
    expect(await loaded.search({ tenantId: 't_A' }, early, LOOKUP_RADIUS)).toEqual([
      expect.objectContaining({ asset_id: 'a_t_A_9100', distance: 0 }),
    ]);
    expect(loaded.heldRows).toBe(before + 2);
  });

  it('answers from Postgres while its first load runs, the same as after it', async () => {
    const target = stored[42]!;
    const scope = { tenantId: target.tenantId };
    const expected = await index.scan(scope, target.bits, LOOKUP_RADIUS);
    expect(expected[0]).toMatchObject({ asset_id: target.assetId, distance: 0 });
    const fresh = new FingerprintIndex(db, LIMITS);
    const loading = fresh.load();
    // Nothing awaited in between: the search is sent while the load has not ended.
    expect(fresh.ready).toBe(false);
    const duringLoad = fresh.search(scope, target.bits, LOOKUP_RADIUS);
    expect(await duringLoad).toEqual(expected);
    await loading;
    expect(fresh.ready).toBe(true);
    expect(fresh.heldRows).toBe(loaded.heldRows);
    expect(await fresh.search(scope, target.bits, LOOKUP_RADIUS)).toEqual(expected);
  });
});
