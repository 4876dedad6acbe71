// The ports the signer's use cases run over, declared here (where the use cases can see them) and implemented
// elsewhere: assets, manifests, jobs, BYOK credentials and certificates in store/ (Postgres); key material (sealed
// keys, the PKCS#11 token), the BYOK remote signer and the C2PA child processes in adapters/. service.ts builds the
// implementations and injects them.
import type { KeyObject, webcrypto } from 'node:crypto';
import type { Tx } from '@cairn/db';
import type { AnyEvent } from '@cairn/events';
import type { DestinationPolicy } from '@cairn/outbound';
import type { JobMark, JobRecords } from '@cairn/runtime';
import type { assets, jobs, manifests, StoredJobProgress } from '../db/assets-schema.js';
import type { CertificateRole, CertificateRow, KeyBackendKind, NewCertificateRow } from '../db/pki-schema.js';
import type { signingCredentials } from '../db/schema.js';
import type { GenerationMetadata } from '../domain/metadata.js';
import type { SignableMimeType } from '../domain/media-types.js';

export type { CertificateRow, NewCertificateRow } from '../db/pki-schema.js';

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

/** Assets and manifests of the signer, under row-level security (store/assets.ts). */
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
}

/** The rows of sign jobs, under row-level security (store/jobs.ts). */
export interface SignJobRecords extends JobRecords<JobRow> {
  /**
   * The job of a sign, one per asset id: a second EnqueueSign of the same asset id (its caller died before
   * recording the first answer) finds the first job (`created: false`); undefined when another tenant's job holds
   * that asset id.
   */
  create(
    tenantId: string,
    jobId: string,
    assetId: string,
    request: unknown,
  ): Promise<{ row: JobRow; created: boolean } | undefined>;
  /** Changes the job's row in the caller's transaction: its start, its end, and a done job's final progress. */
  mark(tx: Tx, jobId: string, fields: JobMark & { progress?: StoredJobProgress }): Promise<void>;
  /**
   * A running job's progress. Only while it runs: a write that lands after the job ended (done or failed in another
   * transaction) changes nothing. Never below the fraction already shown: a retried attempt starts again from 0, and
   * the row holds the earlier attempt's stage and fraction until the new one passes it. Leaves updated_at (the job's
   * last change of state) alone.
   */
  markProgress(tenantId: string, jobId: string, progress: StoredJobProgress): Promise<void>;
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

/** A private key that can make ES256 signatures. The key itself is never reachable through this interface. */
export interface KeyBackend {
  readonly kind: 'software' | 'pkcs11' | 'remote';
  /**
   * ECDSA P-256 over SHA-256(tbs); the signature as raw r‖s (64 bytes, IEEE P1363), which is what COSE ES256
   * carries. Throws CairnError('cairn.signer.unavailable') and nothing else when the key cannot sign.
   */
  sign(tbs: Buffer): Promise<Buffer>;
}

/** What the signing pipeline needs for one signature: the key and the certificates that vouch for it. */
export interface ActiveSigningKey {
  readonly serialHex: string;
  readonly certificatePem: string;
  /** Leaf first, then the intermediate. The root is the verifier's trust anchor and is not sent. */
  readonly chainPem: readonly string[];
  readonly notAfter: Date;
  readonly backend: KeyBackend;
  /** Set when the key is a tenant's own (BYOK): the credential (sc_…) it was registered as. */
  readonly credentialId?: string;
}

/** Binds to the outbox in the wiring: `(tx, event) => outbox.enqueue(tx, event)`. */
export type EnqueueEvent = (tx: Tx, event: AnyEvent) => Promise<void>;

export interface PkiLogger {
  info(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
}

/** The active certificate of each role, where there is one. */
export interface ActiveRows {
  root?: CertificateRow;
  intermediate?: CertificateRow;
  signing?: CertificateRow;
  ocspResponder?: CertificateRow;
  tsa?: CertificateRow;
}

/** What the OCSP responder reads of one certificate. */
export interface CertificateStatusRow {
  status: CertificateRow['status'];
  revokedAt: Date | null;
  reason: string | null;
}

/**
 * The CA's certificates, `signer.certificates`: keys sealed or on the HSM, certificates, their states
 * (store/certificates.ts).
 */
export interface CertificateRecords {
  /** Runs `fn` in a transaction holding the hierarchy's advisory lock (callers re-read state inside it). */
  locked<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
  /** A plain transaction (no hierarchy lock). */
  transaction<T>(fn: (tx: Tx) => Promise<T>): Promise<T>;
  activeRows(tx?: Tx): Promise<ActiveRows>;
  /** The active signing certificate; with `tx`, locked for update. */
  activeSigning(tx?: Tx): Promise<CertificateRow | undefined>;
  /** A certificate by its serial (lower-case hex); with `tx`, locked for update. */
  bySerial(serialHex: string, tx?: Tx): Promise<CertificateRow | undefined>;
  list(roles: readonly CertificateRole[]): Promise<CertificateRow[]>;
  nextSequence(tx: Tx, role: CertificateRole): Promise<number>;
  insert(tx: Tx, values: NewCertificateRow): Promise<CertificateRow>;
  markRevoked(tx: Tx, serialHex: string, now: Date, reason: string): Promise<CertificateRow>;
  /** Retires a certificate (it stays valid, no longer used for new work). */
  retire(tx: Tx, serialHex: string, now: Date): Promise<CertificateRow | undefined>;
  /** Active signing certificates ending by `horizon` and not announced yet, locked (SKIP LOCKED), soonest first. */
  expiringUnannounced(tx: Tx, horizon: Date): Promise<CertificateRow[]>;
  markExpiringAnnounced(tx: Tx, serialHex: string, now: Date): Promise<void>;
  /** The status of `serialHex` as issued by `issuerSerialHex` (the OCSP responder's question). */
  statusOf(issuerSerialHex: string, serialHex: string): Promise<CertificateStatusRow | undefined>;
  /** Intermediates that still answer OCSP (active first, then retired, oldest first) and the active responders. */
  ocspIssuerRows(): Promise<{ intermediates: CertificateRow[]; responders: CertificateRow[] }>;
}

/** Key material for a new signing certificate, made before the transaction that certifies it. */
export interface PreparedSigningKey {
  readonly serialHex: string;
  readonly spki: Buffer;
  readonly columns: { keyBackend: KeyBackendKind; encryptedPrivateKey: string | null; pkcs11Label: string | null };
  discard(): Promise<void>;
}

/**
 * Private keys of the CA (adapters/key-material.ts): made (in memory, sealed under the KEK, or on the HSM token),
 * sealed for storage and opened again for signing. The certificate records keep what this returns.
 */
export interface KeyVault {
  /** A software private key sealed under the KEK, bound to the certificate's serial. */
  seal(serialHex: string, privateKey: webcrypto.CryptoKey): Promise<string>;
  /** Generates the next signing key: in memory (then sealed) or on the HSM token. */
  prepareSigningKey(): Promise<PreparedSigningKey>;
  /** The sealed software key of a CA or responder certificate, imported for signing. */
  caKey(row: CertificateRow): Promise<webcrypto.CryptoKey>;
  /** The backend that signs with a signing certificate's key (software or PKCS#11). */
  backendFor(row: CertificateRow): KeyBackend;
}

/** The watermark a sign embedded: recorded as the soft-binding assertion and the `c2pa.watermarked.bound` action. */
export interface SoftBindingInput {
  /** Soft-binding algorithm id, e.g. `cairn-sync-v2`. */
  alg: string;
  /** Payload hex, as the watermark service reports it. */
  value: string;
  /** Id of the watermark key the mark was embedded with; empty or absent for an unkeyed algorithm. */
  keyId?: string;
}

export interface ThumbnailInput {
  bytes: Buffer;
  mimeType: 'image/jpeg';
}

/** What a C2PA signature is made of, apart from the key that signs it. */
export interface ManifestInput {
  asset: Buffer;
  mimeType: SignableMimeType;
  claimGenerator: { name: 'cairn'; version: string };
  title?: string;
  /**
   * IPTC digital source type URI (e.g. http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia).
   * Set: the manifest records a `c2pa.created` action with it. Unset: the asset is recorded as opened from the
   * received file (`c2pa.opened` + parentOf ingredient), because a v2 claim without either action is invalid.
   * A generative type (trained algorithmic media or data, or a composite with it) adds `c2pa.ai-disclosure`.
   */
  digitalSourceType?: string;
  metadata: GenerationMetadata;
  softBinding?: SoftBindingInput;
  thumbnail?: ThumbnailInput;
  /** The Cairn asset and manifest this signature is for, written as the signed `com.cairn.record` assertion. */
  record?: { assetId: string; manifestId: string };
}

export interface SignedManifest {
  /** The asset with the manifest store embedded (sidecar types: the asset unchanged). */
  signed: Buffer;
  /** The manifest store (JUMBF) exactly as embedded, or the sidecar; served as `application/c2pa` at manifest_uri. */
  manifestStore: Buffer;
  /** Label of the new (active) manifest, e.g. `urn:c2pa:<uuid>`. */
  manifestLabel: string;
}

/**
 * C2PA signing (adapters/c2pa/isolated.ts: c2pa-rs in child processes, the key signs here). A file c2pa-rs cannot
 * read or sign throws C2paSignError (domain/c2pa-failures.ts); a key backend's failure, its own CairnError, and a
 * failed time-stamp, 503 `cairn.signer.unavailable`.
 */
export interface C2paSigning {
  buildAndSign(
    input: ManifestInput,
    key: ActiveSigningKey,
    /** tsaUrl: the RFC 3161 authority c2pa-rs stamps the signature with. */
    options?: { tsaUrl?: string; reserveSize?: number },
  ): Promise<SignedManifest>;
}
