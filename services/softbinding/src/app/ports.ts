// The ports the soft-binding service's lookup runs over, declared here (where the use case can see them) and
// implemented in store/ (the fingerprint and feature indexes, in Postgres) and by the blob store; service.ts builds
// the implementations and injects them.
import type { AudioFingerprint } from '../domain/audio.js';

/** What anyone may learn about a match: never the tenant, the manifest id or the variant. */
export interface PublicMatch {
  asset_id: string;
  manifest_uri: string;
  verifier_url: string;
  distance: number;
  similarity: number;
  alg: string;
}

/** A tenant's own assets, or every asset's public fields. */
export type LookupScope = { tenantId: string } | 'public';

/** Perceptual hashes (images, and video frames) within a Hamming radius (store/fingerprints.ts). */
export interface HashIndex {
  search(scope: LookupScope, bits: Uint8Array, radius: number, limit?: number, alg?: string): Promise<PublicMatch[]>;
  /** An asset's hashes of one algorithm (a video's frames, for the content check). */
  rowsOf(assetId: string, alg: string): Promise<Array<{ variant: string; bits: Uint8Array; quality: number }>>;
}

/** Audio landmarks (store/feature-index.ts). */
export interface AudioSearch {
  search(scope: LookupScope, query: AudioFingerprint, limit: number): Promise<PublicMatch[]>;
}

/** Text MinHash signatures, by LSH band (store/feature-index.ts). */
export interface TextSearch {
  search(scope: LookupScope, query: { signature: Uint32Array; bands: number[] }, limit: number): Promise<PublicMatch[]>;
}

/** The indexes a lookup searches, one per kind of fingerprint. */
export interface Indexes {
  images: HashIndex;
  audio: AudioSearch;
  text: TextSearch;
}
