// The ports the gateway's use cases run over, declared here (where the use cases can see them) and implemented
// elsewhere: the idempotency store in store/, the concurrency slots, the tenant directory and the byReference
// fetcher in adapters/, the other services by their typed gRPC clients. service.ts builds the implementations and injects them.
import type { billingV1, signerV1, softbindingV1, tenantV1, watermarkV1 } from '@cairn/proto';
import type { ClientOf } from '@cairn/rpc';

export type SignerClient = ClientOf<typeof signerV1.SignerService>;
export type SoftBindingClient = ClientOf<typeof softbindingV1.SoftBindingService>;
export type WatermarkClient = ClientOf<typeof watermarkV1.WatermarkService>;
export type BillingClient = ClientOf<typeof billingV1.BillingService>;

/** The signer's calls a sign makes: sign while the client waits, or enqueue a job. */
export type Signing = Pick<SignerClient, 'sign' | 'enqueueSign'>;

/** Billing's calls a metered use case makes: reserve a unit, then commit or release it. */
export type Metering = Pick<BillingClient, 'reserve' | 'commit' | 'release'>;

/** The recipes a plan may sign with (adapters/tenant-directory.ts, from the tenant service). */
export interface RecipeCatalogue {
  /** The recipe, with whether the plan may use it; null when it does not exist. */
  getRecipe(recipeId: string, plan: string): Promise<tenantV1.Recipe | null>;
}

/** The answer a sign gave its client, recorded for a replay of the same Idempotency-Key. */
export interface SignAnswer {
  assetId: string;
  httpStatus: number;
  body: Record<string, unknown>;
}

/** The outcome of claiming an Idempotency-Key. */
export type SignClaim =
  /**
   * This request runs the sign, under `assetId` (recorded with the claim: a takeover signs under the same id, so
   * the signer answers the first sign if it recorded it), and must `finish`, `abandon` or `release` the claim.
   * `takenOver`: an earlier request held it and may have reached the signer.
   */
  | { kind: 'run'; claimId: string; assetId: string; takenOver: boolean }
  /** A finished sign's recorded answer. */
  | { kind: 'replay'; answer: SignAnswer }
  /** Another request is signing under this key right now. */
  | { kind: 'busy'; retryAfterSeconds: number };

/**
 * Exactly-once signing per (tenant, Idempotency-Key) (store/sign-requests.ts): `claim` before the sign, then one
 * of `finish` (the answer, for replays), `release` (the outcome is unknown: the retry signs under the same asset
 * id) or `abandon` (no sign of that asset id can have been recorded: the key is forgotten).
 */
export interface SignRequests {
  claim(tenantId: string, idempotencyKey: string, requestHash: string): Promise<SignClaim>;
  /** False when this claim's lease ran out and another request took it over. */
  finish(tenantId: string, idempotencyKey: string, claimId: string, answer: SignAnswer): Promise<boolean>;
  release(tenantId: string, idempotencyKey: string, claimId: string): Promise<void>;
  abandon(tenantId: string, idempotencyKey: string, claimId: string): Promise<void>;
}

/** A held slot; `release` is safe to call more than once. */
export interface Slot {
  release(): Promise<void>;
}

/** At most `limit` concurrent holders per subject (adapters/concurrency-limit.ts, across every replica). */
export interface ConcurrencySlots {
  /** A slot, or null when `limit` are held already. */
  tryAcquire(subject: string, limit: number): Promise<Slot | null>;
}

/** A tenant as the gateway's routes use it (the tenant service's record, in the gateway's types; adapters/tenant-directory.ts). */
export interface Tenant {
  tenantId: string;
  name: string;
  plan: string;
  parentTenantId: string | null;
  spendingCapUsd: number | null;
  auditRetentionDays: number;
  auditRetentionDaysMax: number;
  rateLimitRps: number;
  rateLimitDaily: number;
  createdAt: Date;
  updatedAt: Date;
}

/** Fetches the asset a caller names (the resolution API's byReference): its bytes, or cairn.resolution.fetch_failed. */
export type ReferenceFetcher = (referenceUrl: string, maxBytes: number) => Promise<Buffer>;

export type UploadState = 'pending' | 'receiving' | 'uploaded' | 'used' | 'expired';

export interface UploadSessionRow {
  uploadId: string;
  tenantId: string;
  blobKey: string;
  declaredSize: number;
  contentType: string | null;
  state: UploadState;
  size: number | null;
  sha256: string | null;
  expiresAt: Date;
  /** Whether expires_at is past, on the database's clock. */
  expired: boolean;
}

export interface NewUploadSession {
  uploadId: string;
  tenantId: string;
  blobKey: string;
  filename?: string;
  declaredSize: number;
  contentType?: string;
  ttlSeconds: number;
}

/** How many sessions a tenant may hold open, and how many bytes they may declare together. */
export interface OpenSessionLimits {
  maxOpen: number;
  maxOutstandingBytes: number;
}

export type CreatedUploadSession =
  { created: UploadSessionRow } | { refused: 'sessions' | 'bytes'; open: number; outstandingBytes: number };

/** Upload sessions as a row state machine, pending → receiving → uploaded → used, or expired (store/upload-sessions.ts). */
export interface UploadSessionRecords {
  /** A new session, unless the tenant's open sessions would then number or declare more than `limits`. */
  create(row: NewUploadSession, limits: OpenSessionLimits): Promise<CreatedUploadSession>;
  /** The unauthenticated PUT's view: the one session its signed URL names. */
  byId(uploadId: string): Promise<UploadSessionRow | null>;
  /** Moves the session from one state to another if it is still in `from` and unexpired; false when it was not. */
  transition(
    uploadId: string,
    from: UploadState[],
    to: UploadState,
    received?: { size: number; sha256: string },
  ): Promise<boolean>;
  /** The tenant's own session (null for none, or another tenant's). */
  forTenant(tenantId: string, uploadId: string): Promise<UploadSessionRow | null>;
  /** One expiry sweep step: up to `batch` unused sessions past their expiry marked expired; their blob keys. */
  expireDue(batch?: number): Promise<string[]>;
}
