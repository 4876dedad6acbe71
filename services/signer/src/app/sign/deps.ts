import type { BlobStore } from '@cairn/blob';
import type { Database } from '@cairn/db';
import type { Logger } from '@cairn/logging';
import type { MediaLimits } from '@cairn/media';
import type { anchorV1, signerV1, watermarkV1, AnchorBatchStateName } from '@cairn/proto';
import type { ClientOf } from '@cairn/rpc';
import type { Outbox } from '@cairn/runtime';
import { inSpan } from '@cairn/telemetry';
import type { CertificateAuthority } from '../pki/certificate-authority.js';
import type { AssetRecords, C2paSigning } from '../ports.js';
import type { Credentials } from '../credentials.js';

export type SignRequest = signerV1.SignRequest;
/**
 * What a sign produced, as the signer keeps it (a job's stored result) and answers it (rpc.ts maps it onto
 * SignResponse): the anchor's state by its public name, times as ISO 8601.
 */
export interface SignResult {
  assetId: string;
  watermarkId: string;
  manifestId: string;
  manifestUri: string;
  verifierUrl: string;
  assetUrl: string;
  mediaType: string;
  anchor?: { batchId: string; status: AnchorBatchStateName };
  createdAt: string;
  expiresAt: string;
  /**
   * True when this asset id was already recorded and this is its recorded result (a retried Sign): nothing was
   * signed, written or published again, and the caller must not bill it again.
   */
  replayed?: boolean;
  /** Notes on the sign, a closed set: `watermark_not_embedded` (see watermarkNotEmbeddedReason). */
  warnings?: SignWarning[];
  /** Why the watermark the recipe asks for was not embedded: no mark read back from the signed content. */
  watermarkNotEmbeddedReason?: string;
}

/** The sign answer's warnings (docs/api.md, "Sign warnings"). */
export type SignWarning = 'watermark_not_embedded';

/** What a sign works with (service.ts builds it). */
export interface PipelineDeps {
  db: Database;
  blobs: BlobStore;
  outbox: Outbox;
  store: AssetRecords;
  authority: CertificateAuthority;
  watermark: ClientOf<typeof watermarkV1.WatermarkService>;
  /** Tenants' own signing credentials (BYOK); absent: a sign that names one is refused. */
  credentials?: Pick<Credentials, 'activeKey'>;
  /** Enqueues manifest digests for anchoring (recipes with the anchor layer); absent: no anchoring. */
  anchor?: ClientOf<typeof anchorV1.AnchorService>;
  logger?: Logger;
  /** C2PA signing: c2pa-rs in child processes, the key signing in this one (adapters/c2pa/isolated.ts). */
  c2pa: C2paSigning;
  publicBaseUrl: string;
  /**
   * The RFC 3161 time-stamping authority every signature is stamped by (TSA_URL, or the signer's own TSA);
   * a sign whose time-stamp fails is refused (503), never written without one. Absent only in unit tests and tools.
   */
  tsaUrl?: string;
  /**
   * How long a sign's claim on its asset id lives (ASSET_CLAIM_LEASE_SECONDS): a retry of the same asset id meanwhile
   * is told to retry later; past it (the signer died mid-sign) the retry takes it over. Unset: 180 s.
   */
  assetClaimLeaseSeconds?: number;
  /** What a sign decodes at most; refused from the headers (cairn.media.too_large) before anything is decoded. */
  mediaLimits: MediaLimits;
  /**
   * How long a sign job's video marking waits for the watermark service to come back mid-stream
   * (SIGN_JOB_WATERMARK_WAIT_MS). Unset: not at all (the job's next attempt is its retry).
   */
  watermarkWaitMs?: number;
  version: string;
  /** Seconds spent per pipeline stage (decode, watermark, encode, c2pa, store, record, anchor), for /metrics. */
  observeStage?: (stage: SignStage, seconds: number) => void;
}

export type SignStage = 'read' | 'decode' | 'watermark' | 'encode' | 'c2pa' | 'store' | 'record' | 'anchor';

/** The steps a sign job's progress names (JobProgress.stage): reading, watermarking, signing, storing. */
export type SignProgressStage = 'reading' | 'watermarking' | 'signing' | 'storing';

/**
 * Told how far a sign is: the step it entered, and 0..1 of the whole (frames marked / expected while a video is
 * watermarked, 1 from signing on). A sign job's worker passes one; a synchronous sign does not.
 */
export type SignProgress = (stage: SignProgressStage, fraction: number) => void;

/** Runs one stage of a sign in a span of its own (sign.<stage>) and reports its duration. */
export async function timed<T>(deps: PipelineDeps, stage: SignStage, work: () => Promise<T>): Promise<T> {
  const started = process.hrtime.bigint();
  try {
    return await inSpan(`sign.${stage}`, work);
  } finally {
    deps.observeStage?.(stage, Number(process.hrtime.bigint() - started) / 1e9);
  }
}

/** The watermark a sign embedded (its id, the payload it carries, the algorithm and key that wrote it). */
export interface EmbeddedWatermark {
  id: string;
  payloadHex: string;
  algorithm: string;
  /** The watermark key's id as the watermark service answered it; empty for an unkeyed algorithm. */
  keyId: string;
}

/** What the C2PA step answers: the signed file, its manifest store and the active manifest's label. */
export interface SignedBytes {
  signed: Buffer;
  manifestStore: Buffer;
  manifestLabel: string;
}
