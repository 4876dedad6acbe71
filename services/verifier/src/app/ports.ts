// The ports the verifier's use cases run over, declared here (where the use cases can see them) and implemented
// elsewhere: the C2PA reader in adapters/c2pa, the kept verdicts and the verify jobs in store/, the other services
// by their typed gRPC clients. service.ts builds the implementations and injects them.
import type { anchorV1, signerV1, softbindingV1, watermarkV1 } from '@cairn/proto';
import type { ClientOf } from '@cairn/rpc';
import type { JobRecords } from '@cairn/runtime';
import type { verifyJobs } from '../db/schema.js';
import type { JsonValue } from '../domain/c2pa/crjson.js';
import type { C2paReading, ReadManifestInput } from '../domain/c2pa/types.js';
import type { ListInForce } from '../domain/trust-decision.js';
import type { Verdict } from '../domain/verdict.js';

export type SignerClient = ClientOf<typeof signerV1.SignerService>;
export type WatermarkClient = ClientOf<typeof watermarkV1.WatermarkService>;
export type SoftBindingClient = ClientOf<typeof softbindingV1.SoftBindingService>;
export type AnchorClient = ClientOf<typeof anchorV1.AnchorService>;

export interface ReadOptions {
  /** Overrides the pool's per-file budget for this read. */
  timeoutMs?: number;
}

/** Reads a file's C2PA manifest store, isolated from the verifier's process (adapters/c2pa). */
export interface ManifestReader {
  readManifest(input: ReadManifestInput, options?: ReadOptions): Promise<C2paReading>;
  /** Resolves when the reader children have loaded c2pa-node. */
  ready(): Promise<void>;
  close(): Promise<void>;
  /** PIDs of the reader children. */
  readonly pids: number[];
}

/**
 * What a verify reads of an asset's public record: fields written once, when the asset is signed (so they may be
 * kept, app/verify/signal-cache.ts). Its retention state is not among them: that is the subject's business
 * (app/verify/subject.ts).
 */
export type PublicRecord = Pick<signerV1.Asset, 'assetId' | 'manifestId' | 'createdAt'>;

/** The signer's calls a verify makes: the asset or manifest an input names, an asset's public record. */
export type VerifySigner = Pick<SignerClient, 'getAsset' | 'getManifest' | 'getPublicAsset' | 'findAssetByContent'>;
/** The watermark service's detections, one per modality. */
export type VerifyWatermark = Pick<WatermarkClient, 'detectImage' | 'detectAudio' | 'detectVideo'>;
/** The soft-binding service's lookup, and its check that content is a given asset's. */
export type VerifySoftBinding = Pick<SoftBindingClient, 'lookup' | 'compareContent'>;
/** The anchor service's check of a manifest digest against the chain. */
export type VerifyAnchor = Pick<AnchorClient, 'checkAnchor'>;

/** The trust lists in force (app/trust-lists.ts): a tenant's, and the roots of Cairn's own signing certificates. */
export interface TrustInForce {
  forTenant(
    tenantId: string | undefined,
  ): Promise<{ pems: string[]; source: 'default' | 'custom'; lists: ListInForce[] }>;
  cairnRoots(): Promise<string[]>;
}

export type StoredResult = Omit<Verdict, 'matches'> & { manifest_id: string; asset_id: string; verified_at: string };

/** A crJSON validation report (domain/c2pa/crjson.ts). */
export type StoredReport = { [key: string]: JsonValue };

export interface KeptVerdict {
  result: StoredResult;
  computedAt: Date;
  expiresAt: Date;
  trustDigest: string;
  stale: boolean;
  /** The validation report made from the same reading as `result`; absent for verdicts kept before reports. */
  report?: StoredReport;
}

/** The stored verdict of each Cairn manifest (store/results.ts). */
export interface VerdictRecords {
  save(
    result: StoredResult,
    kept: { expiresAt: Date; trustDigest: string; anchorSettled: boolean; report?: StoredReport },
  ): Promise<void>;
  get(manifestId: string): Promise<KeptVerdict | null>;
  /** Marks verdicts for recomputation: all of them (a signing certificate was revoked), or those waiting for an anchor. */
  markStale(which: 'all' | 'anchor_pending'): Promise<void>;
}

export type VerifyJobRow = typeof verifyJobs.$inferSelect;

/** The rows of asynchronous verifies, each under its tenant (store/jobs.ts). */
export interface VerifyJobRecords extends JobRecords<VerifyJobRow> {
  create(tenantId: string, jobId: string, uploadBlobKey: string, reservationId: string): Promise<void>;
}
