import { sql } from 'drizzle-orm';
import type { Database, Tx } from '@cairn/db';
import {
  alignment,
  AUDIO_ALG,
  isAudioMatch,
  queryHashes,
  type AlignmentScore,
  type AudioFingerprint,
  type Landmark,
} from '../domain/audio.js';
import {
  estimateSimilarity,
  signatureFromHex,
  signatureToHex,
  TEXT_ALG,
  TEXT_MATCH_THRESHOLD,
  type TextFingerprint,
} from '../domain/text.js';
import type { AudioSearch, IndexedAsset, LookupScope, PublicMatch, TextSearch } from '../app/ports.js';
import { inScope } from './fingerprints.js';
import { audioLandmarks, indexedAssets, textBands } from '../db/schema.js';

interface AssetRow extends Record<string, unknown> {
  tenant_id: string;
  asset_id: string;
  manifest_uri: string;
  verifier_url: string;
  signature: string | null;
  features: number;
}

const ROWS_PER_INSERT = 5000;

/**
 * Audio landmarks: every landmark of a signed clip is a row (hash, t). A lookup fetches the rows sharing a hash
 * with the query (one index scan), then scores each candidate asset by time alignment (domain/audio.ts).
 * `distance` in a match is the number of query landmarks that did not align.
 */
export class AudioIndex implements AudioSearch {
  constructor(private readonly db: Database) {}

  /** Idempotent per (tenant, asset): a second add of the same asset changes nothing. */
  async add(tx: Tx, asset: IndexedAsset, fingerprint: AudioFingerprint): Promise<void> {
    if (!(await claimAsset(tx, asset, AUDIO_ALG, null, fingerprint.landmarks.length))) return;
    for (let i = 0; i < fingerprint.landmarks.length; i += ROWS_PER_INSERT) {
      await tx
        .insert(audioLandmarks)
        .values(
          fingerprint.landmarks
            .slice(i, i + ROWS_PER_INSERT)
            .map((l) => ({ tenantId: asset.tenantId, assetId: asset.assetId, hash: l.hash, t: l.t })),
        );
    }
  }

  async alignmentWith(assetId: string, query: AudioFingerprint): Promise<AlignmentScore> {
    const rows = await inScope(this.db, 'public', (tx) => landmarksSharing(tx, query, assetId));
    return alignment(query.landmarks, rows);
  }

  async search(scope: LookupScope, query: AudioFingerprint, limit: number): Promise<PublicMatch[]> {
    if (query.landmarks.length === 0) return [];
    return inScope(this.db, scope, async (tx) => {
      const byAsset = new Map<string, Array<{ hash: number; t: number }>>();
      for (const row of await landmarksSharing(tx, query)) {
        const key = `${row.tenant_id}\u0000${row.asset_id}`;
        const list = byAsset.get(key);
        if (list) list.push(row);
        else byAsset.set(key, [row]);
      }
      const scored: Array<{ key: string; aligned: number; similarity: number }> = [];
      for (const [key, rows] of byAsset) {
        const score = alignment(query.landmarks, rows);
        if (isAudioMatch(score)) scored.push({ key, aligned: score.aligned, similarity: score.similarity });
      }
      scored.sort((a, b) => b.similarity - a.similarity || a.key.localeCompare(b.key));
      const top = scored.slice(0, limit);
      const assets = await assetRows(
        tx,
        AUDIO_ALG,
        top.map((s) => s.key),
      );
      return top.flatMap((s) => {
        const row = assets.get(s.key);
        return row
          ? [
              {
                asset_id: row.asset_id,
                manifest_uri: row.manifest_uri,
                verifier_url: row.verifier_url,
                distance: query.landmarks.length - s.aligned,
                similarity: s.similarity,
                alg: AUDIO_ALG,
              },
            ]
          : [];
      });
    });
  }
}

/**
 * The indexed landmarks (of one asset, when named) sharing a hash with the query's own or the neighbours a codec's
 * shift of a frame makes: one scan of the hash index, which also serves one asset (it has no index of its own).
 */
async function landmarksSharing(
  tx: Tx,
  query: AudioFingerprint,
  assetId?: string,
): Promise<Array<{ tenant_id: string; asset_id: string; hash: number; t: number }>> {
  const hashes = [...new Set(query.landmarks.flatMap((l: Landmark) => queryHashes(l.hash)))];
  if (hashes.length === 0) return [];
  const ofAsset = assetId === undefined ? sql`` : sql` and asset_id = ${assetId}`;
  const hits = await tx.execute<{ tenant_id: string; asset_id: string; hash: number; t: number }>(
    sql`select tenant_id, asset_id, hash, t from softbinding.audio_landmarks where hash = any(${`{${hashes.join(',')}}`}::int[])${ofAsset}`,
  );
  return hits.rows;
}

/**
 * Text MinHash: the signature (hex) on the asset row, its LSH band keys as rows. Candidates share a band key
 * with the query; each is scored by the estimated Jaccard similarity of the signatures. `distance` in a match
 * is the number of the 128 slots that differ.
 */
export class TextIndex implements TextSearch {
  constructor(private readonly db: Database) {}

  async add(tx: Tx, asset: IndexedAsset, fingerprint: TextFingerprint): Promise<void> {
    if (!(await claimAsset(tx, asset, TEXT_ALG, signatureToHex(fingerprint.signature), fingerprint.signature.length)))
      return;
    await tx
      .insert(textBands)
      .values(
        [...new Set(fingerprint.bands)].map((band) => ({ tenantId: asset.tenantId, assetId: asset.assetId, band })),
      );
  }

  async search(
    scope: LookupScope,
    query: { signature: Uint32Array; bands: number[] },
    limit: number,
  ): Promise<PublicMatch[]> {
    return inScope(this.db, scope, async (tx) => {
      const candidates = await tx.execute<AssetRow>(sql`
        select a.tenant_id, a.asset_id, a.manifest_uri, a.verifier_url, a.signature, a.features from softbinding.indexed_assets a
        where a.alg = ${TEXT_ALG} and (a.tenant_id, a.asset_id) in (
          select tenant_id, asset_id from softbinding.text_bands where band = any(${`{${query.bands.join(',')}}`}::bigint[]))`);
      const slots = query.signature.length;
      const out: PublicMatch[] = [];
      for (const row of candidates.rows) {
        if (!row.signature) continue;
        const similarity = estimateSimilarity(query.signature, signatureFromHex(row.signature));
        if (similarity < TEXT_MATCH_THRESHOLD) continue;
        out.push({
          asset_id: row.asset_id,
          manifest_uri: row.manifest_uri,
          verifier_url: row.verifier_url,
          distance: Math.round((1 - similarity) * slots),
          similarity: Math.round(similarity * 1000) / 1000,
          alg: TEXT_ALG,
        });
      }
      return out.sort((a, b) => b.similarity - a.similarity || a.asset_id.localeCompare(b.asset_id)).slice(0, limit);
    });
  }
}

/** The asset's row for `alg`; false when it is indexed already (a redelivered event), so nothing is added twice. */
async function claimAsset(
  tx: Tx,
  asset: IndexedAsset,
  alg: string,
  signature: string | null,
  features: number,
): Promise<boolean> {
  const inserted = await tx
    .insert(indexedAssets)
    .values({ ...asset, alg, signature, features })
    .onConflictDoNothing()
    .returning({ assetId: indexedAssets.assetId });
  return inserted.length > 0;
}

async function assetRows(tx: Tx, alg: string, keys: string[]): Promise<Map<string, AssetRow>> {
  if (keys.length === 0) return new Map();
  const assetIds = keys.map((k) => k.split('\u0000')[1]!);
  const rows = await tx.execute<AssetRow>(sql`
    select tenant_id, asset_id, manifest_uri, verifier_url, signature, features from softbinding.indexed_assets
    where alg = ${alg} and asset_id = any(${`{${assetIds.join(',')}}`}::text[])`);
  return new Map(rows.rows.map((r) => [`${r.tenant_id}\u0000${r.asset_id}`, r]));
}
