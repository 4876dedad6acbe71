import type { MessageInitShape } from '@bufbuild/protobuf';
import { blobKeyOf } from '@cairn/blob';
import { CairnError } from '@cairn/errors';
import { parseActorKeyId } from '@cairn/events';
import { isId } from '@cairn/ids';
import { anchorBatchStates, jobStates, signerV1, toTimestamp } from '@cairn/proto';
import type { ImplOf } from '@cairn/rpc';
import { signAsset, type PipelineDeps, type SignResult } from './app/sign/index.js';
import { storedSignResult, type SignJobs } from './app/jobs.js';
import { storedJobProgress } from './app/job-progress.js';
import { isRevocationReason } from '@cairn/ocsp';
import type { CertificateAuthority } from './app/pki/certificate-authority.js';
import type { CredentialRow, Credentials } from './app/credentials.js';
import type { AssetRow, Assets } from './app/assets.js';

/** The API key an admin change names as its actor (audit entry); a value that is not a key id is refused. */
function actorKeyIdOf(raw: string): string | null {
  const actor = parseActorKeyId(raw);
  if (actor === undefined) throw new CairnError('cairn.validation.invalid_body', 'actor_key_id must be an API key id');
  return actor;
}

function requireTenant(tenantId: string): string {
  if (!isId('tenant', tenantId)) throw new CairnError('cairn.validation.invalid_body', 'tenant_id must be a t_ id');
  return tenantId;
}

function credentialMessage(row: CredentialRow): MessageInitShape<typeof signerV1.SigningCredentialSchema> {
  return {
    credentialId: row.credentialId,
    description: row.description,
    subject: row.subject,
    notAfter: toTimestamp(row.notAfter),
    endpointUrl: row.endpointUrl,
    createdAt: toTimestamp(row.createdAt),
  };
}

/** Largest receipt body SignReceipt signs. */
const RECEIPT_TBS_MAX_BYTES = 4096;

function signResponse(result: SignResult): MessageInitShape<typeof signerV1.SignResponseSchema> {
  const { anchor, createdAt, expiresAt, ...fields } = result;
  return {
    ...fields,
    createdAt: toTimestamp(createdAt),
    expiresAt: toTimestamp(expiresAt),
    ...(anchor ? { anchor: { batchId: anchor.batchId, status: anchorBatchStates.toProto(anchor.status) } } : {}),
  };
}

function requireIds(tenantId: string, assetId: string): void {
  if (!isId('tenant', tenantId)) throw new CairnError('cairn.validation.invalid_body', 'tenant_id must be a t_ id');
  if (!isId('asset', assetId)) throw new CairnError('cairn.not_found', `Asset ${assetId} not found.`);
}

/**
 * The upload a sign reads (and a job deletes when it ends) must be one of the signing tenant's uploads: a key of
 * another shape or tenant never reaches the blob store (packages/blob keys.ts).
 */
function requireOwnUpload(tenantId: string, uploadBlobKey: string): void {
  if (!blobKeyOf(uploadBlobKey, 'upload', tenantId))
    throw new CairnError('cairn.validation.invalid_body', 'upload_blob_key must name an upload of this tenant.');
}

function presentAsset(row: AssetRow): signerV1.Asset {
  return {
    $typeName: 'cairn.signer.v1.Asset',
    assetId: row.assetId,
    tenantId: row.tenantId,
    mediaType: row.mediaType,
    manifestId: row.manifestId,
    watermarkId: row.watermarkId ?? '',
    recipeId: row.recipeId,
    blobKey: row.blobKey ?? '',
    createdAt: toTimestamp(row.createdAt),
    expiresAt: toTimestamp(row.expiresAt),
    expired: row.deletedAt !== null || row.expiresAt.getTime() <= Date.now(),
    metadataJson: JSON.stringify(row.metadata),
    signerName: row.signerName,
    sizeBytes: BigInt(row.sizeBytes),
  };
}

/** cairn.signer.v1.SignerService. */
// eslint-disable-next-line max-lines-per-function -- the service's handler table: one short mapping per RPC, read whole
export function signerHandlers(
  deps: PipelineDeps & {
    assets: Assets;
    jobs: SignJobs;
    authority: CertificateAuthority;
    credentials: Credentials;
  },
): ImplOf<typeof signerV1.SignerService> {
  return {
    sign: async (request) => {
      requireIds(request.tenantId, request.assetId);
      requireOwnUpload(request.tenantId, request.uploadBlobKey);
      return signResponse(await signAsset(deps, request));
    },
    enqueueSign: async (request) => {
      if (!request.sign) throw new CairnError('cairn.validation.invalid_body', 'sign is required');
      requireIds(request.sign.tenantId, request.sign.assetId);
      requireOwnUpload(request.sign.tenantId, request.sign.uploadBlobKey);
      const { jobId, status, replayed } = await deps.jobs.enqueue(request.sign);
      return { jobId, status: jobStates.toProto(status), replayed };
    },
    getJob: async (request) => {
      const job = await deps.jobs.job(request.tenantId, request.jobId);
      const progress = storedJobProgress(job.progress);
      return {
        job: {
          jobId: job.jobId,
          status: jobStates.toProto(job.status),
          ...(job.result ? { result: signResponse(storedSignResult(job.result)) } : {}),
          problemJson: job.problem ? JSON.stringify(job.problem) : '',
          createdAt: toTimestamp(job.createdAt),
          updatedAt: toTimestamp(job.updatedAt),
          attempts: job.attempts,
          ...(progress ? { progress: { ...progress, updatedAt: toTimestamp(progress.updatedAt) } } : {}),
        },
      };
    },
    getAsset: async (request) => {
      requireIds(request.tenantId, request.assetId);
      return { asset: presentAsset(await deps.assets.ofTenant(request.tenantId, request.assetId)) };
    },
    getPublicAsset: async (request) => {
      const row = await deps.assets.public(request.assetId);
      // Public: no storage location, no tenant.
      return { asset: { ...presentAsset(row), blobKey: '', tenantId: '' } };
    },
    findAssetByContent: async (request) => {
      const row = await deps.assets.byContent(request.contentSha256);
      return row ? { asset: { ...presentAsset(row), blobKey: '', tenantId: '' } } : {};
    },
    getManifest: async (request) => {
      const {
        bytes: store,
        row,
        asset,
      } = await deps.assets.manifest(request.manifestId, request.label, {
        activeOnly: request.activeManifestOnly,
        withoutStore: request.withoutStore,
      });
      return {
        manifestStore: store,
        assetId: row.assetId,
        createdAt: toTimestamp(row.createdAt),
        assetBlobKey: asset?.deletedAt ? '' : (asset?.blobKey ?? ''),
        mediaType: asset?.mediaType ?? '',
        ...(asset ? { expiresAt: toTimestamp(asset.expiresAt) } : {}),
        manifestId: row.manifestId,
      };
    },
    getThumbnail: async (request) => ({
      jpeg: await deps.assets.thumbnail(request.assetId),
    }),
    getTrustAnchors: async () => ({ rootPem: [(await deps.authority.ensureDevelopmentPki()).root.pem] }),
    signReceipt: async (request) => {
      // A receipt is a few hundred bytes; the bound keeps the signer from hashing whatever a caller sends.
      if (request.tbs.length === 0 || request.tbs.length > RECEIPT_TBS_MAX_BYTES)
        throw new CairnError('cairn.validation.invalid_body', `tbs must be 1..${RECEIPT_TBS_MAX_BYTES} bytes`);
      const active = await deps.authority.activeSigningKey();
      return { signature: await active.backend.sign(Buffer.from(request.tbs)), chainPem: [...active.chainPem] };
    },
    registerCredential: async (request) => {
      const tenantId = requireTenant(request.tenantId);
      const registered = await deps.credentials.register(
        tenantId,
        {
          chainPem: request.certificateChainPem,
          endpointUrl: request.endpointUrl,
          description: request.description.slice(0, 200),
          proofOfPossession: request.proofOfPossession,
        },
        actorKeyIdOf(request.actorKeyId),
      );
      return { credential: credentialMessage(registered.row), hmacSecret: registered.hmacSecret };
    },
    listCredentials: async (request) => ({
      credentials: (await deps.credentials.list(requireTenant(request.tenantId))).map(credentialMessage),
    }),
    deleteCredential: async (request) => {
      const tenantId = requireTenant(request.tenantId);
      if (
        !isId('credential', request.credentialId) ||
        !(await deps.credentials.delete(tenantId, request.credentialId, actorKeyIdOf(request.actorKeyId)))
      ) {
        throw new CairnError('cairn.not_found', `Signing credential ${request.credentialId} not found.`);
      }
      return {};
    },
    revokeCertificate: async (request) => {
      const reason = request.reason || 'unspecified';
      if (!isRevocationReason(reason))
        throw new CairnError('cairn.validation.invalid_body', `Unknown revocation reason "${reason}".`);
      const result = await deps.authority.revoke(request.serialHex || 'current', reason, (tx, event) =>
        deps.outbox.enqueue(tx, event),
      );
      if (!result.ok)
        throw new CairnError(
          result.error === 'not_found' ? 'cairn.not_found' : 'cairn.validation.invalid_body',
          `Cannot revoke: ${result.error}`,
        );
      if (!result.alreadyRevoked) void deps.outbox.flush();
      return { serialHex: result.revoked.serialHex, revokedAt: toTimestamp(result.revoked.revokedAt ?? new Date()) };
    },
  };
}
