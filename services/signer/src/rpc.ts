import { fromJson, type JsonValue } from '@bufbuild/protobuf';
import type { GenService } from '@bufbuild/protobuf/codegenv2';
import type { BlobStore } from '@cairn/blob';
import { CairnError } from '@cairn/errors';
import { isId } from '@cairn/ids';
import { signerV1 } from '@cairn/proto';
import type { ServiceImpl } from '@cairn/rpc';
import { activeManifestOnly } from './domain/manifest-store.js';
import { signAsset, type PipelineDeps } from './domain/pipeline.js';
import type { SignJobs } from './jobs.js';
import { isRevocationReason, type CertificateAuthority } from './pki/index.js';
import type { Credentials } from './app/credentials.js';
import { pageThumbnail } from './app/thumbnails.js';
import type { AssetRow, AssetStore } from './store/assets.js';
import type { CredentialRow } from './store/credentials.js';

/** A C2PA manifest label as c2pa-rs writes it: urn:c2pa:<uuid>[:<generator>[:<version>]] or the older urn:uuid:<uuid>. */
function isManifestLabel(label: string): boolean {
  return (
    label.length <= 256 &&
    /^urn:(c2pa|uuid):[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(:[\w.-]*){0,2}$/i.test(label)
  );
}

function requireTenant(tenantId: string): string {
  if (!isId('tenant', tenantId)) throw new CairnError('cairn.validation.invalid_body', 'tenant_id must be a t_ id');
  return tenantId;
}

function credentialMessage(row: CredentialRow): {
  credentialId: string;
  description: string;
  subject: string;
  notAfter: string;
  endpointUrl: string;
  createdAt: string;
} {
  return {
    credentialId: row.credentialId,
    description: row.description,
    subject: row.subject,
    notAfter: row.notAfter.toISOString(),
    endpointUrl: row.endpointUrl,
    createdAt: row.createdAt.toISOString(),
  };
}

type Methods = typeof signerV1.SignerService extends GenService<infer M> ? M : never;

function requireIds(tenantId: string, assetId: string): void {
  if (!isId('tenant', tenantId)) throw new CairnError('cairn.validation.invalid_body', 'tenant_id must be a t_ id');
  if (!isId('asset', assetId)) throw new CairnError('cairn.not_found', `Asset ${assetId} not found.`);
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
    createdAt: row.createdAt.toISOString(),
    expiresAt: row.expiresAt.toISOString(),
    expired: row.deletedAt !== null || row.expiresAt.getTime() <= Date.now(),
    metadataJson: JSON.stringify(row.metadata),
    signerName: row.signerName,
    sizeBytes: BigInt(row.sizeBytes),
  };
}

/** cairn.signer.v1.SignerService. */
export function signerHandlers(
  deps: PipelineDeps & {
    store: AssetStore;
    jobs: SignJobs;
    blobs: BlobStore;
    authority: CertificateAuthority;
    credentials: Credentials;
  },
): ServiceImpl<Methods> {
  return {
    sign: async (request) => {
      requireIds(request.tenantId, request.assetId);
      return signAsset(deps, request);
    },
    enqueueSign: async (request) => {
      if (!request.sign) throw new CairnError('cairn.validation.invalid_body', 'sign is required');
      requireIds(request.sign.tenantId, request.sign.assetId);
      const { jobId } = await deps.jobs.enqueue(request.sign);
      return { jobId, status: 'queued' };
    },
    getJob: async (request) => {
      const job = isId('job', request.jobId) ? await deps.store.getJob(request.tenantId, request.jobId) : null;
      if (!job) throw new CairnError('cairn.not_found', `Job ${request.jobId} not found.`);
      return {
        job: {
          jobId: job.jobId,
          status: job.status,
          ...(job.result ? { result: fromJson(signerV1.SignResponseSchema, job.result as JsonValue) } : {}),
          problemJson: job.problem ? JSON.stringify(job.problem) : '',
          createdAt: job.createdAt.toISOString(),
          updatedAt: job.updatedAt.toISOString(),
          attempts: job.attempts,
        },
      };
    },
    getAsset: async (request) => {
      requireIds(request.tenantId, request.assetId);
      const row = await deps.store.getForTenant(request.tenantId, request.assetId);
      if (!row) throw new CairnError('cairn.not_found', `Asset ${request.assetId} not found.`);
      return { asset: presentAsset(row) };
    },
    getPublicAsset: async (request) => {
      const row = isId('asset', request.assetId) ? await deps.store.getPublic(request.assetId) : null;
      if (!row) throw new CairnError('cairn.not_found', `Asset ${request.assetId} not found.`);
      // Public: no storage location, no tenant.
      return { asset: { ...presentAsset(row), blobKey: '', tenantId: '' } };
    },
    findAssetByContent: async (request) => {
      if (!/^[0-9a-f]{64}$/.test(request.contentSha256))
        throw new CairnError('cairn.validation.invalid_body', 'content_sha256 is 64 lowercase hex digits.');
      const row = await deps.store.findByContent(request.contentSha256);
      return row ? { asset: { ...presentAsset(row), blobKey: '', tenantId: '' } } : {};
    },
    getManifest: async (request) => {
      const row = isId('manifest', request.manifestId)
        ? await deps.store.getManifest(request.manifestId)
        : !request.manifestId && isManifestLabel(request.label)
          ? await deps.store.getManifestByLabel(request.label)
          : null;
      const bytes = row ? await deps.blobs.getBuffer(row.blobKey) : null;
      if (!row || !bytes)
        throw new CairnError('cairn.not_found', `Manifest ${request.manifestId || request.label} not found.`);
      const store = request.activeManifestOnly ? activeManifestOnly(bytes) : bytes;
      if (!store) throw new CairnError('cairn.internal_error', 'The stored manifest store cannot be read.');
      const asset = await deps.store.getPublic(row.assetId);
      return {
        manifestStore: store,
        assetId: row.assetId,
        createdAt: row.createdAt.toISOString(),
        assetBlobKey: asset?.deletedAt ? '' : (asset?.blobKey ?? ''),
        mediaType: asset?.mediaType ?? '',
        expiresAt: asset?.expiresAt.toISOString() ?? '',
        manifestId: row.manifestId,
      };
    },
    getThumbnail: async (request) => ({
      jpeg: await pageThumbnail(
        { assets: deps.store, blobs: deps.blobs, mediaLimits: deps.mediaLimits },
        request.assetId,
      ),
    }),
    getTrustAnchors: async () => ({ rootPem: [(await deps.authority.ensureDevelopmentPki()).root.pem] }),
    registerCredential: async (request) => {
      const tenantId = requireTenant(request.tenantId);
      const registered = await deps.credentials.register(tenantId, {
        chainPem: request.certificateChainPem,
        endpointUrl: request.endpointUrl,
        description: request.description.slice(0, 200),
      });
      return { credential: credentialMessage(registered.row), hmacSecret: registered.hmacSecret };
    },
    listCredentials: async (request) => ({
      credentials: (await deps.credentials.list(requireTenant(request.tenantId))).map(credentialMessage),
    }),
    deleteCredential: async (request) => {
      const tenantId = requireTenant(request.tenantId);
      if (
        !isId('credential', request.credentialId) ||
        !(await deps.credentials.delete(tenantId, request.credentialId))
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
      return { serialHex: result.revoked.serialHex, revokedAt: (result.revoked.revokedAt ?? new Date()).toISOString() };
    },
  };
}
