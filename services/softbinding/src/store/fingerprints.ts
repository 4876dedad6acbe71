import { sql } from 'drizzle-orm';
import { withTenant, type Database, type Tx } from '@cairn/db';
import { CHUNKS, fingerprints } from '../db/schema.js';
import {
  chunksOf,
  HammingIndex,
  neighbours,
  type HammingHit,
  type HammingIndexLimits,
} from '../domain/hamming-index.js';

/** What anyone may learn about a match: never the tenant, the manifest id or the variant. */
export interface PublicMatch {
  asset_id: string;
  manifest_uri: string;
  verifier_url: string;
  distance: number;
  similarity: number;
  alg: string;
}

/** The record a signed asset's fingerprint points back to. */
export interface IndexedAsset {
  tenantId: string;
  assetId: string;
  manifestId: string;
  manifestUri: string;
  verifierUrl: string;
}

export interface NewFingerprint extends IndexedAsset {
  alg: string;
  variant: string;
  bits: Uint8Array;
  quality: number;
}

/** Who is looking: a tenant (its own rows only) or the public (every row, public fields only). */
export type LookupScope = { tenantId: string } | 'public';

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

interface HeldRow extends Record<string, unknown> {
  id: string;
  tenant_id: string;
  alg: string;
  /** The hash's 16 chunks (c0..c15), from which its bits are rebuilt. */
  chunks: number[];
}

/** The 32 bytes of a hash from its 16 chunks of 16 bits. */
function bitsOfChunks(chunks: number[]): Uint8Array {
  const out = new Uint8Array(CHUNKS * 2);
  chunks.forEach((c, i) => {
    out[2 * i] = c >> 8;
    out[2 * i + 1] = c & 0xff;
  });
  return out;
}

/** Rows read per round trip when the in-memory index loads from (or catches up with) Postgres. */
const LOAD_BATCH = 20_000;

/**
 * The soft-binding index. Postgres holds every fingerprint (the record, tenant-scoped by RLS); the search runs by
 * multi-index hashing, in memory when the service holds the hashes (`load`, then kept current by `add` and
 * `catchUp`), else over Postgres: by pigeonhole, a hash within distance r of the query has at least one of its 16
 * chunks within floor(r/16) of the query's chunk; those chunk values are exact-matched through the 16 chunk indexes
 * (a bitmap OR) and the full 256-bit distance is confirmed in SQL (bit_count). Either way the matches' records are
 * read from Postgres in the caller's scope, so RLS still decides what a tenant or the public sees.
 */
export class FingerprintIndex {
  private readonly memory: HammingIndex | undefined;
  /** The highest row id `catchUp` has read: it reads the rows after it. */
  private cursor = 0;
  /** Rows this process added (held at once) that `catchUp` has not read past yet: not held twice. */
  private readonly heldAhead = new Set<number>();
  private loaded = false;

  /** With `memory`, `load` brings every row's hash into the service (about 110 bytes a row) within those bounds. */
  constructor(
    private readonly db: Database,
    memory?: HammingIndexLimits,
  ) {
    this.memory = memory && new HammingIndex(memory);
  }

  /** Rows held in memory (0 without the in-memory index). */
  get heldRows(): number {
    return this.memory?.size ?? 0;
  }

  /** Reads every tenant's hashes into memory (at start); until then searches go to Postgres. */
  async load(): Promise<void> {
    if (!this.memory) return;
    await this.catchUp();
    this.loaded = true;
  }

  /**
   * Reads the rows added since the last read (by another process; this one's own `add` holds its rows at once).
   * Row ids are taken in order but committed in any order: another process's row committed after a later one was
   * read is not held until the next start (the deployment runs one indexing consumer, this process, so its rows
   * are held by `add`).
   */
  async catchUp(): Promise<void> {
    const memory = this.memory;
    if (!memory) return;
    for (;;) {
      const batch = await inScope(this.db, 'public', (tx) =>
        tx.execute<HeldRow>(sql`
          select id, tenant_id, alg, array[${sql.raw(Array.from({ length: CHUNKS }, (_, i) => `c${i}`).join(', '))}] as chunks
          from softbinding.fingerprints where id > ${this.cursor} order by id limit ${LOAD_BATCH}`),
      );
      for (const row of batch.rows) {
        const id = Number(row.id);
        if (id <= this.cursor) continue;
        this.cursor = id;
        if (this.heldAhead.delete(id)) continue;
        memory.add({ id, tenantId: row.tenant_id, alg: row.alg, bits: bitsOfChunks(row.chunks) });
      }
      for (const id of this.heldAhead) if (id <= this.cursor) this.heldAhead.delete(id);
      if (batch.rows.length < LOAD_BATCH) return;
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
      if (!bits || row.id <= this.cursor || this.heldAhead.has(row.id)) continue;
      memory.add({ id: row.id, tenantId: row.tenantId, alg: row.alg, bits });
      this.heldAhead.add(row.id);
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
