import { sql } from 'drizzle-orm';
import { withTenant, type Database, type Tx } from '@cairn/db';
import type { HashIndex, LookupScope, NewFingerprint, PublicMatch } from '../app/ports.js';
import { CHUNKS, fingerprints } from '../db/schema.js';
import {
  chunksOf,
  HammingIndex,
  neighbours,
  type HammingHit,
  type HammingIndexLimits,
} from '../domain/hamming-index.js';

export type { LookupScope, PublicMatch } from '../app/ports.js';

export type { IndexedAsset, NewFingerprint } from '../app/ports.js';

/** Who is looking: a tenant (its own rows only) or the public (every row, public fields only). */

export { chunksOf, neighbours } from '../domain/hamming-index.js';

const bitLiteral = (bits: Uint8Array) => `x${Buffer.from(bits).toString('hex')}`;
const similarityOf = (distance: number) => Math.max(0, Math.round((1 - distance / 128) * 1000) / 1000);

interface Row extends Record<string, unknown> {
  asset_id: string;
  manifest_uri: string;
  verifier_url: string;
  alg: string;
  distance: number;
}

/** One (tenant, algorithm) group of a load batch: `packed` holds `count` records of PACKED_BYTES. */
interface PackedGroup extends Record<string, unknown> {
  tenant_id: string;
  alg: string;
  count: number;
  last_id: string;
  packed: Buffer;
}

/** A packed record: row id (int8), inserting transaction (int8, 0 when unknown), the hash's 32 bytes. */
const PACKED_BYTES = 8 + 8 + 32;

/**
 * Rows read per round trip when the in-memory index loads from (or catches up with) Postgres. Each batch comes
 * back as one bytea per (tenant, algorithm), not a row per fingerprint: parsing 48 bytes of binary costs the
 * service far less than a row of text columns and an int array (19.6k rows/s for the row-per-fingerprint read).
 */
const LOAD_BATCH = 50_000;

/** Chained rows below which the in-memory index is not re-sorted (the chains of a few thousand rows are short). */
const COMPACT_AT_LEAST = 4096;

/**
 * The soft-binding index. Postgres holds every fingerprint (the record, tenant-scoped by RLS); the search runs by
 * multi-index hashing, in memory when the service holds the hashes (`load`, then kept current by `add` and
 * `catchUp`), else over Postgres: by pigeonhole, a hash within distance r of the query has at least one of its 16
 * chunks within floor(r/16) of the query's chunk; those chunk values are exact-matched through the 16 chunk indexes
 * (a bitmap OR) and the full 256-bit distance is confirmed in SQL (bit_count). Either way the matches' records are
 * read from Postgres in the caller's scope, so RLS still decides what a tenant or the public sees.
 *
 * Catch-up follows commit order, not id order (several replicas each hold every row; only one of them indexes a
 * given asset): every read runs in one repeatable-read snapshot and keeps that snapshot's xmin as its horizon, the
 * oldest transaction that could still commit rows the read did not see. The next read takes every row whose
 * inserting transaction (`xid`, migration 0005) is at or after that horizon, and `recent` (rows held at or after
 * it) keeps a row read twice, or added here and then read, from being held twice.
 */
export class FingerprintIndex implements HashIndex {
  private memory: HammingIndex | undefined;
  /** Every transaction before it had finished when the last read's snapshot was taken (0: nothing read yet). */
  private horizon = 0;
  /** Rows held whose transaction is at or after `horizon` (id → xid): the next read may meet them again. */
  private readonly recent = new Map<number, number>();
  /** The read under way (load or catch-up): one at a time, in order. */
  private reading: Promise<void> = Promise.resolve();
  private pending = 0;
  private loaded = false;
  private closed = false;

  /** With `memory`, `load` brings every row's hash into the service (about 110 bytes a row) within those bounds. */
  constructor(
    private readonly db: Database,
    private readonly limits?: HammingIndexLimits,
  ) {
    this.memory = limits && new HammingIndex(limits);
  }

  /** Rows held in memory (0 without the in-memory index). */
  get heldRows(): number {
    return this.memory?.size ?? 0;
  }

  /** True once the in-memory index holds every row that had committed when its first read began. */
  get ready(): boolean {
    return this.loaded;
  }

  /** True while a load or catch-up runs (a periodic caller skips its turn rather than queue behind it). */
  get busy(): boolean {
    return this.pending > 0;
  }

  /**
   * Reads every tenant's hashes into memory. The service starts serving before it ends: until then searches go to
   * the Postgres multi-index (the same answers, slower). A failed load leaves nothing half-held: the next
   * `catchUp` starts it again.
   */
  load(): Promise<void> {
    return this.catchUp();
  }

  /**
   * Reads what committed since the last read (rows another process added; this one's own `add` holds its rows at
   * once), or everything when nothing was read yet. Calls queue: each read starts after the previous one ended.
   */
  catchUp(): Promise<void> {
    if (!this.memory || this.closed) return Promise.resolve();
    this.pending++;
    const run = this.reading.then(() => this.read());
    // The caller of this read gets its failure; the queue only waits for it to end before the next read.
    this.reading = run.catch(() => undefined);
    return run.finally(() => this.pending--);
  }

  private async read(): Promise<void> {
    if (!this.limits) return;
    const first = !this.loaded;
    // A first load that failed part way is started over from nothing (rows are not held twice).
    if (first && this.memory!.size > 0) {
      this.memory = new HammingIndex(this.limits);
      this.recent.clear();
    }
    const memory = this.memory!;
    const since = this.horizon;
    const horizon = await this.db.transaction(
      async (tx) => {
        await tx.execute(sql`select set_config('cairn.softbinding_public', 'on', true)`);
        // The first statement fixes the transaction's snapshot; its xmin is the next read's horizon.
        const snapshot = await tx.execute<{ horizon: string }>(
          sql`select pg_snapshot_xmin(pg_current_snapshot())::text as horizon`,
        );
        const newer = first ? sql`true` : sql`xid >= ${since}`;
        let after = 0;
        for (;;) {
          const batch = await tx.execute<PackedGroup>(sql`
            with b as (
              select id, tenant_id, alg, xid, hash from softbinding.fingerprints
              where ${newer} and id > ${after} order by id limit ${LOAD_BATCH}
            )
            select tenant_id, alg, count(*)::int as count, max(id)::text as last_id,
              string_agg(int8send(id) || int8send(coalesce(xid, 0)) || substring(varbit_send(hash) from 5), ''::bytea) as packed
            from b group by tenant_id, alg`);
          let rows = 0;
          for (const group of batch.rows) {
            rows += group.count;
            after = Math.max(after, Number(group.last_id));
            this.holdPacked(memory, group, Number(snapshot.rows[0]!.horizon));
          }
          if (rows < LOAD_BATCH) break;
          // A load stopped by shutdown is abandoned between batches (its connection is released at once).
          if (this.closed) throw new Error('fingerprint index closed');
        }
        return Number(snapshot.rows[0]!.horizon);
      },
      { isolationLevel: 'repeatable read', accessMode: 'read only' },
    );
    this.horizon = horizon;
    for (const [id, xid] of this.recent) if (xid < horizon) this.recent.delete(id);
    this.loaded = true;
    // Chained rows are slower to search than sorted ones: sort them once they are an eighth of the index, a chunk
    // per turn of the event loop (lookups go on meanwhile, and are right whatever is sorted).
    if (memory.unsorted > Math.max(COMPACT_AT_LEAST, memory.size / 8)) {
      for (let c = 0; c < CHUNKS; c++) {
        memory.compact(c);
        await new Promise<void>((resolve) => setImmediate(resolve));
      }
    }
  }

  /** Stops reading (at shutdown): a read under way ends at its next batch, and later calls do nothing. */
  async close(): Promise<void> {
    this.closed = true;
    await this.reading;
  }

  /** Holds a group's records unless held already; remembers those the next read (from `horizon`) may meet again. */
  private holdPacked(memory: HammingIndex, group: PackedGroup, horizon: number): void {
    const packed = group.packed;
    for (let at = 0; at + PACKED_BYTES <= packed.length; at += PACKED_BYTES) {
      const id = Number(packed.readBigInt64BE(at));
      const xid = Number(packed.readBigInt64BE(at + 8));
      if (this.recent.has(id)) continue;
      if (!memory.add({ id, tenantId: group.tenant_id, alg: group.alg, bits: packed.subarray(at + 16, at + 48) }))
        continue;
      if (xid >= horizon) this.recent.set(id, xid);
    }
  }

  /** Idempotent: the same (tenant, asset, alg, variant) again leaves the row as it was. */
  async add(tx: Tx, rows: NewFingerprint[]): Promise<void> {
    if (rows.length === 0) return;
    const inserted = await tx
      .insert(fingerprints)
      .values(
        rows.map((r) => {
          const c = chunksOf(r.bits);
          return {
            tenantId: r.tenantId,
            assetId: r.assetId,
            manifestId: r.manifestId,
            manifestUri: r.manifestUri,
            verifierUrl: r.verifierUrl,
            alg: r.alg,
            variant: r.variant,
            hash: Array.from(r.bits, (b) => b.toString(2).padStart(8, '0')).join(''),
            quality: r.quality,
            c0: c[0]!,
            c1: c[1]!,
            c2: c[2]!,
            c3: c[3]!,
            c4: c[4]!,
            c5: c[5]!,
            c6: c[6]!,
            c7: c[7]!,
            c8: c[8]!,
            c9: c[9]!,
            c10: c[10]!,
            c11: c[11]!,
            c12: c[12]!,
            c13: c[13]!,
            c14: c[14]!,
            c15: c[15]!,
          };
        }),
      )
      .onConflictDoNothing()
      .returning({
        id: fingerprints.id,
        tenantId: fingerprints.tenantId,
        alg: fingerprints.alg,
        variant: fingerprints.variant,
        assetId: fingerprints.assetId,
        xid: fingerprints.xid,
      });
    // Held at once, before the transaction commits: a row whose transaction then rolls back is held but never
    // read back (the records are read from Postgres), so it can only cost a wasted candidate.
    const memory = this.memory;
    if (!memory || !this.loaded) return;
    const bitsOf = new Map(
      rows.map((r) => [`${r.tenantId}\u0000${r.assetId}\u0000${r.alg}\u0000${r.variant}`, r.bits]),
    );
    for (const row of [...inserted].sort((x, y) => x.id - y.id)) {
      const bits = bitsOf.get(`${row.tenantId}\u0000${row.assetId}\u0000${row.alg}\u0000${row.variant}`);
      if (!bits || row.xid === null || this.recent.has(row.id)) continue;
      // Remembered until a read's horizon passes its transaction: that read may meet the row, and skips it.
      if (memory.add({ id: row.id, tenantId: row.tenantId, alg: row.alg, bits })) this.recent.set(row.id, row.xid);
    }
  }

  /** Matches within `radius` (< 32), best first, one per asset: in memory when it holds the scope's rows. */
  async search(scope: LookupScope, bits: Uint8Array, radius: number, limit = 10, alg?: string): Promise<PublicMatch[]> {
    const memory = this.memory;
    const held =
      memory !== undefined &&
      this.loaded &&
      (scope === 'public' ? !memory.anyOverflowed() : !memory.overflowed(scope.tenantId));
    if (!held) return this.searchPostgres(scope, bits, radius, limit, alg);
    const hits = memory.search(bits, radius, { tenantId: scope === 'public' ? undefined : scope.tenantId, alg });
    if (hits.length === 0) return [];
    return this.records(scope, hits, limit);
  }

  /**
   * Every stored row of one asset under `alg` (its variant, hash and quality), whichever tenant signed it: the
   * content check compares a copy with them and answers only whether they match, never the rows.
   */
  async rowsOf(assetId: string, alg: string): Promise<Array<{ variant: string; bits: Uint8Array; quality: number }>> {
    return inScope(this.db, 'public', async (tx) => {
      const result = await tx.execute<{ variant: string; hash: string; quality: number }>(sql`
        select variant, hash::text as hash, quality from softbinding.fingerprints
        where asset_id = ${assetId} and alg = ${alg} order by variant limit ${MAX_ROWS_OF_ASSET}`);
      return result.rows.map((r) => ({ variant: r.variant, bits: bitsOf(r.hash), quality: r.quality }));
    });
  }

  /** Multi-index hashing over Postgres's chunk indexes (without the in-memory index, or beyond its bounds). */
  searchPostgres(
    scope: LookupScope,
    bits: Uint8Array,
    radius: number,
    limit = 10,
    alg?: string,
  ): Promise<PublicMatch[]> {
    if (radius < 0 || radius >= 2 * CHUNKS * 16) throw new RangeError('radius out of range');
    const perChunk = Math.floor(radius / CHUNKS);
    const chunks = chunksOf(bits);
    const candidates = sql.join(
      chunks.map((c, i) => sql`${sql.raw(`c${i}`)} = any(${`{${neighbours(c, perChunk).join(',')}}`}::int[])`),
      sql` or `,
    );
    return this.run(scope, bits, radius, limit, alg ? sql`(${candidates}) and alg = ${alg}` : sql`(${candidates})`);
  }

  /** The same answer by a sequential scan of every visible row (the baseline, and the property tests' oracle). */
  scan(scope: LookupScope, bits: Uint8Array, radius: number, limit = 10): Promise<PublicMatch[]> {
    return this.run(scope, bits, radius, limit, sql`true`);
  }

  /**
   * The records of the rows found in memory, as the scope may see them, ordered as `run` orders its matches. One
   * round trip: softbinding.fingerprint_records sets the scope for RLS itself (migration 0004), where a transaction
   * would take four (begin, set_config, select, commit) — most of a lookup's time once the search is in memory.
   */
  private async records(scope: LookupScope, hits: HammingHit[], limit: number): Promise<PublicMatch[]> {
    const ids = `{${hits.map((h) => h.id).join(',')}}`;
    const distances = `{${hits.map((h) => h.distance).join(',')}}`;
    const tenant = scope === 'public' ? null : scope.tenantId;
    const result = await this.db.execute<Row>(sql`
      select distinct on (distance, tenant_id, asset_id) asset_id, manifest_uri, verifier_url, alg, distance
      from softbinding.fingerprint_records(${tenant}, ${scope === 'public'}, ${ids}::bigint[], ${distances}::int[])
      order by distance, tenant_id, asset_id`);
    return firstPerAsset(result.rows, limit);
  }

  private async run(
    scope: LookupScope,
    bits: Uint8Array,
    radius: number,
    limit: number,
    where: ReturnType<typeof sql>,
  ): Promise<PublicMatch[]> {
    const query = async (tx: Tx) => {
      const result = await tx.execute<Row>(sql`
        select distinct on (distance, tenant_id, asset_id) asset_id, manifest_uri, verifier_url, alg, distance from (
          select tenant_id, asset_id, manifest_uri, verifier_url, alg, bit_count(hash # (${bitLiteral(bits)}::text)::bit(256))::int as distance
          from softbinding.fingerprints where ${where}
        ) m where distance <= ${radius}
        order by distance, tenant_id, asset_id`);
      return firstPerAsset(result.rows, limit);
    };
    return inScope(this.db, scope, query);
  }
}

/** More rows than one asset is ever given (48 frames × 7 hashes), read at most. */
const MAX_ROWS_OF_ASSET = 512;

/** A bit(256) as Postgres prints it ('0101…') → 32 bytes, most significant bit first. */
function bitsOf(text: string): Uint8Array {
  const out = new Uint8Array(text.length >> 3);
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 49) out[i >> 3] = out[i >> 3]! | (0x80 >> (i & 7));
  return out;
}

/** One match per asset (its nearest row, the rows coming best first), at most `limit`. */
function firstPerAsset(rows: Row[], limit: number): PublicMatch[] {
  const seen = new Set<string>();
  const out: PublicMatch[] = [];
  for (const row of rows) {
    const key = `${row.asset_id}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(publicMatch(row));
    if (out.length >= limit) break;
  }
  return out;
}

/** Runs a read as the scope allows: a tenant's own rows, or (public) every row, of which callers return public fields. */
export function inScope<T>(db: Database, scope: LookupScope, read: (tx: Tx) => Promise<T>): Promise<T> {
  if (scope === 'public') {
    return db.transaction(async (tx) => {
      await tx.execute(sql`select set_config('cairn.softbinding_public', 'on', true)`);
      return read(tx);
    });
  }
  return withTenant(db, scope.tenantId, read);
}

/** Only the public fields, whatever the row held. */
export function publicMatch(row: Row): PublicMatch {
  return {
    asset_id: row.asset_id,
    manifest_uri: row.manifest_uri,
    verifier_url: row.verifier_url,
    distance: row.distance,
    similarity: similarityOf(row.distance),
    alg: row.alg,
  };
}
