import { sql } from 'drizzle-orm';
import { withTenant, type Database, type Tx } from '@cairn/db';
import { CHUNKS, fingerprints } from '../db/schema.js';

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

const CHUNK_BITS = 16;

/** The 16 chunks of 16 bits of a 256-bit hash, most significant first. */
export function chunksOf(bits: Uint8Array): number[] {
  const out: number[] = [];
  for (let i = 0; i < CHUNKS; i++) out.push((bits[2 * i]! << 8) | bits[2 * i + 1]!);
  return out;
}

/** Every 16-bit value within Hamming distance `radius` of `value` (1, 17, 137, … values). */
export function neighbours(value: number, radius: number): number[] {
  const out = [value];
  let frontier = [{ v: value, from: 0 }];
  for (let d = 1; d <= radius; d++) {
    const next: Array<{ v: number; from: number }> = [];
    for (const { v, from } of frontier)
      for (let b = from; b < CHUNK_BITS; b++) next.push({ v: v ^ (1 << b), from: b + 1 });
    for (const n of next) out.push(n.v);
    frontier = next;
  }
  return out;
}

const bitLiteral = (bits: Uint8Array) => `x${Buffer.from(bits).toString('hex')}`;
const similarityOf = (distance: number) => Math.max(0, Math.round((1 - distance / 128) * 1000) / 1000);

interface Row extends Record<string, unknown> {
  asset_id: string;
  manifest_uri: string;
  verifier_url: string;
  alg: string;
  distance: number;
}

/**
 * The soft-binding index: multi-index hashing over Postgres. By pigeonhole, a hash within distance r of the query
 * has at least one of its 16 chunks within floor(r/16) of the query's chunk; those chunk values are exact-matched
 * through the 16 chunk indexes (a bitmap OR), and the full 256-bit distance is confirmed in SQL (bit_count).
 */
export class FingerprintIndex {
  constructor(private readonly db: Database) {}

  /** Idempotent: the same (tenant, asset, alg, variant) again leaves the row as it was. */
  async add(tx: Tx, rows: NewFingerprint[]): Promise<void> {
    if (rows.length === 0) return;
    await tx
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
      .onConflictDoNothing();
  }

  /** Matches within `radius` (< 32), best first, one per asset, through the chunk indexes. */
  search(scope: LookupScope, bits: Uint8Array, radius: number, limit = 10, alg?: string): Promise<PublicMatch[]> {
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
      const seen = new Set<string>();
      const out: PublicMatch[] = [];
      for (const row of result.rows) {
        const key = `${row.asset_id}`;
        if (seen.has(key)) continue;
        seen.add(key);
        out.push(publicMatch(row));
        if (out.length >= limit) break;
      }
      return out;
    };
    return inScope(this.db, scope, query);
  }
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
