// The ports the soft-binding service's use cases run over, declared here (where the use cases can see them) and
// implemented in store/ (the fingerprint and feature indexes, in Postgres), in adapters/ (the fingerprinters, which
// decode with sharp and ffmpeg) and by the blob store; service.ts builds the implementations and injects them.
import type { Tx } from '@cairn/db';
import type { AlignmentScore, AudioFingerprint } from '../domain/audio.js';
import type { PerceptualHash } from '../domain/pdq.js';
import type { TextFingerprint } from '../domain/text.js';
import type { VideoFrameHash } from '../domain/video.js';

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
  /** How `query` lines up with one asset's indexed sound (none indexed: nothing aligns), for the content check. */
  alignmentWith(assetId: string, query: AudioFingerprint): Promise<AlignmentScore>;
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

/** The indexes an indexed asset's fingerprints are written to, in the event's transaction (store/). */
export interface IndexWriters {
  images: { add(tx: Tx, rows: NewFingerprint[]): Promise<void> };
  audio: { add(tx: Tx, asset: IndexedAsset, fingerprint: AudioFingerprint): Promise<void> };
  text: { add(tx: Tx, asset: IndexedAsset, fingerprint: TextFingerprint): Promise<void> };
}

/** One hash of an image as indexed: the whole picture, or one of its variants (crops, a quarter). */
export interface IndexedHash extends PerceptualHash {
  variant: string;
}

/** The fingerprints of media files (adapters/: decoding is sharp's and ffmpeg's); typed errors for bad input. */
export interface Fingerprinters {
  /** The algorithm of the image hashes. */
  readonly imageAlg: string;
  /** An image's whole-picture hash (the lookup side). */
  imageHash(bytes: Buffer): Promise<PerceptualHash>;
  /** An image's hashes as indexed: the whole picture and its variants. */
  imageHashes(bytes: Buffer): Promise<IndexedHash[]>;
  /** An audio file's fingerprint (a video's audio track too). */
  audio(bytes: Buffer): Promise<AudioFingerprint>;
  /** A video's sound as audio; null when it has none. */
  soundtrack(bytes: Buffer): Promise<AudioFingerprint | null>;
  /** A video's frame hashes at scene changes, with their crop variants when `crops`. */
  videoFrames(bytes: Buffer, options?: { crops?: boolean }): Promise<VideoFrameHash[]>;
  /** The copy's side of the content check: frames sampled evenly, and the seconds they span. */
  sampleVideo(bytes: Buffer): Promise<{ frames: VideoFrameHash[]; spanSeconds: number }>;
}

/** A stored manifest as the public may read it. */
export interface StoredManifest {
  manifestId: string;
  sha256: string;
  bytes: Buffer;
  receipt: string;
}

export interface NewStoredManifest extends StoredManifest {
  tenantId: string;
  label: string;
}

/** The outcome of binding a value: done, the manifest is not the tenant's, or the value is already bound elsewhere. */
export type BindOutcome = 'bound' | 'no_manifest' | 'no_binding' | 'bound_elsewhere';

/** Cairn's signature over a receipt, and Cairn's roots to check one against (the signer, over gRPC). */
export interface ReceiptSigning {
  sign(tbs: Buffer): Promise<{ signature: Uint8Array; chainPem: readonly string[] }>;
  roots(): Promise<readonly string[]>;
}

/** Stored manifests and their bindings (store/repository.ts). */
export interface StoredManifests {
  /**
   * Inserts the manifest and binds its own values (a value the tenant already bound elsewhere stays there), unless
   * the tenant already keeps `maxPerTenant`. The tenant's inserts are serialised (a transaction-scoped advisory lock
   * on its id), so concurrent uploads cannot overshoot the count.
   */
  insert(
    manifest: NewStoredManifest,
    bindings: ReadonlyArray<{ alg: string; value: string }>,
    maxPerTenant: number,
  ): Promise<number | 'quota_exceeded'>;
  get(manifestId: string): Promise<StoredManifest | undefined>;
  /** Deletes the tenant's manifest (its bindings go with it); false when it is not the tenant's. */
  delete(tenantId: string, manifestId: string): Promise<boolean>;
  /** Binds (or, with `replace`, moves the tenant's binding of) `value` to the tenant's manifest `manifestId`. */
  bind(
    tenantId: string,
    binding: { manifestId: string; alg: string; value: string },
    replace: boolean,
  ): Promise<BindOutcome>;
  /** Manifests bound to `value` under `alg` or under no algorithm, newest binding first (every tenant's). */
  find(alg: string, value: string, limit: number): Promise<string[]>;
}
