// The ports the signer's use cases run over, declared here (where the use cases can see them) and implemented
// elsewhere: assets, manifests, jobs and BYOK credentials in store/ (Postgres), the BYOK remote signer in adapters/.
// service.ts builds the implementations and injects them.
import type { KeyObject } from 'node:crypto';
import type { Tx } from '@cairn/db';
import type { DestinationPolicy } from '@cairn/outbound';
import type { assets, jobs, manifests, StoredJobProgress } from '../db/assets-schema.js';
import type { signingCredentials } from '../db/schema.js';
import type { KeyBackend } from '../pki/index.js';

export type AssetRow = typeof assets.$inferSelect;
export type NewAssetRow = typeof assets.$inferInsert;
export type ManifestRow = typeof manifests.$inferSelect;
export type NewManifestRow = typeof manifests.$inferInsert;
export type JobRow = typeof jobs.$inferSelect;
export type CredentialRow = typeof signingCredentials.$inferSelect;

/** The outcome of claiming an asset id before signing it. */
export type AssetClaim =
  /** This attempt signs the asset and must record it (which drops the claim) or `releaseClaim`. */
  | { kind: 'claimed'; claimId: string }
  /** The asset is already recorded, for this tenant: its recorded result is the answer. */
  | { kind: 'recorded'; asset: AssetRow }
  /** Another attempt is signing this asset id right now. */
  | { kind: 'busy'; retryAfterSeconds: number }
  /** Another tenant signed, or is signing, an asset with this id. */
  | { kind: 'foreign' };

/** Assets, manifests and jobs of the signer, under row-level security (store/assets.ts). */
export interface AssetRecords {
  /**
   * Claims `assetId` for one sign, in one short transaction (no connection is held while the sign runs). Already
   * recorded: the recorded asset. Claimed by a live attempt: busy. Lapsed (its signer died), or held under the
   * same `claimId` (a job's next attempt, after the signer running it died): taken over.
   */
  claimAsset(tenantId: string, assetId: string, leaseSeconds: number, claimId?: string): Promise<AssetClaim>;
  /** Drops the claim of a sign that did not record its asset, so a retry with the same id may run at once. */
  releaseClaim(tenantId: string, assetId: string, claimId: string): Promise<void>;
  /**
   * Records a signed asset and its manifest, in the caller's transaction, and drops the claim it was signed under
   * (the fence): false, and nothing written, when that claim lapsed and another attempt took it over.
   */
  insertSigned(tx: Tx, asset: NewAssetRow, manifest: NewManifestRow, claimId: string): Promise<boolean>;
  getForTenant(tenantId: string, assetId: string): Promise<AssetRow | null>;
  /** One asset by id for the public verifier page (the caller exposes only public fields). */
  getPublic(assetId: string): Promise<AssetRow | null>;
  /** The newest asset whose signed file is exactly the bytes of this SHA-256 and is still kept. */
  findByContent(contentSha256: string): Promise<AssetRow | null>;
  getManifest(manifestId: string): Promise<ManifestRow | null>;
  /** The manifest whose active manifest has this C2PA label (a public lookup, like by id). */
  getManifestByLabel(label: string): Promise<ManifestRow | null>;
  /** Assets past their retention that still hold a file: the expiry sweep's work list. */
  claimExpired(limit: number, remove: (row: AssetRow) => Promise<void>): Promise<number>;
  /**
   * The job of a sign, one per asset id: a second EnqueueSign of the same asset id (its caller died before
   * recording the first answer) finds the first job (`created: false`); undefined when another tenant's job holds
   * that asset id.
   */
  createJob(
    tenantId: string,
    jobId: string,
    assetId: string,
    request: unknown,
  ): Promise<{ row: JobRow; created: boolean } | undefined>;
  /** Removes a job nobody was told about (its queue item was refused), while it is still only queued. */
  deleteQueuedJob(tenantId: string, jobId: string): Promise<void>;
  getJob(tenantId: string, jobId: string): Promise<JobRow | null>;
  markJob(
    tx: Tx,
    jobId: string,
    fields: Partial<Pick<JobRow, 'status' | 'result' | 'problem' | 'attempts' | 'progress'>>,
  ): Promise<void>;
  /**
   * A running job's progress. Only while it runs: a write that lands after the job ended (done or failed in another
   * transaction) changes nothing. Never below the fraction already shown: a retried attempt starts again from 0, and
   * the row holds the earlier attempt's stage and fraction until the new one passes it. Leaves updated_at (the job's
   * last change of state) alone.
   */
  markJobProgress(tenantId: string, jobId: string, progress: StoredJobProgress): Promise<void>;
}

/** A tenant's BYOK credentials, under its row-level security (store/credentials.ts). */
export interface CredentialRecords {
  /** `alsoInTx` runs in the insert's transaction (the audit event), so both commit or neither. */
  insert(
    alsoInTx: (tx: Tx, inserted: CredentialRow) => Promise<void>,
    row: Omit<CredentialRow, 'createdAt' | 'deletedAt'>,
  ): Promise<CredentialRow>;
  get(tenantId: string, credentialId: string): Promise<CredentialRow | null>;
  list(tenantId: string): Promise<CredentialRow[]>;
  /** `alsoInTx` runs in the deletion's transaction with the deleted row (the audit event). */
  delete(
    tenantId: string,
    credentialId: string,
    alsoInTx: (tx: Tx, deleted: CredentialRow) => Promise<void>,
  ): Promise<boolean>;
}

/** How to reach a tenant's BYOK signing endpoint for one credential. */
export interface RemoteKeyOptions {
  url: string;
  credentialId: string;
  hmacSecret: string;
  /** The registered leaf's key: every signature the endpoint answers must verify under it. */
  leafPublicKey: KeyObject;
  timeoutMs: number;
  policy: DestinationPolicy;
}

/** A key backend that signs through a tenant's BYOK endpoint (adapters/remote-signer.ts). */
export type RemoteKeyBackend = (options: RemoteKeyOptions) => KeyBackend;
