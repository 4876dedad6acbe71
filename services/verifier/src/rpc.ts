import { X509Certificate } from 'node:crypto';
import { fromJson, type JsonValue, type MessageInitShape } from '@bufbuild/protobuf';
import { blobKeyOf } from '@cairn/blob';
import { CairnError } from '@cairn/errors';
import { parseActorKeyId } from '@cairn/events';
import { isId } from '@cairn/ids';
import { jobStates, modalities, toTimestamp, verificationStatuses, verifierV1 } from '@cairn/proto';
import type { ImplOf } from '@cairn/rpc';
import { storedVerdict, type StoredVerdictDeps } from './app/stored-verdict.js';
import type { VerifyJobs } from './app/verify-jobs.js';
import { verify } from './app/verify/index.js';
import { toResultMessage } from './domain/result-message.js';
import type { TrustListIdentity } from './domain/trust-decision.js';

function trustListEntry(pem: string, origin: string): MessageInitShape<typeof verifierV1.TrustListEntrySchema> {
  const cert = new X509Certificate(pem);
  return {
    subject: cert.subject.replace(/\n/g, ', '),
    origin,
    sha256Fingerprint: cert.fingerprint256,
    notAfter: toTimestamp(new Date(cert.validTo)),
  };
}

function snapshotMessage(identity: TrustListIdentity): MessageInitShape<typeof verifierV1.TrustListSnapshotSchema> {
  return {
    list: identity.list,
    name: identity.name,
    source: identity.source,
    ...(identity.issuedAt ? { issuedAt: toTimestamp(new Date(identity.issuedAt)) } : {}),
    sha256: identity.sha256,
    certificates: identity.certificates,
    ...(identity.loadedAt ? { loadedAt: toTimestamp(new Date(identity.loadedAt)) } : {}),
    frozen: identity.frozen === true,
  };
}

/** The API key an admin change names as its actor (audit entry); a value that is not a key id is refused. */
function actorKeyIdOf(raw: string): string | null {
  const actor = parseActorKeyId(raw);
  if (actor === undefined) throw new CairnError('cairn.validation.invalid_body', 'actor_key_id must be an API key id');
  return actor;
}

/**
 * A done job's stored result (protobuf JSON of VerificationResult). Rows written before the status was an enum
 * (docs/decisions/0005-shared-enums-and-timestamps.md) hold its public name ("verified_manifest"), which protobuf JSON
 * does not read: it is mapped here.
 */
function storedResultJson(stored: unknown): JsonValue {
  const json = stored as { [key: string]: JsonValue };
  const status = json.status;
  return typeof status === 'string' && verificationStatuses.is(status)
    ? { ...json, status: verificationStatuses.toProto(status) }
    : json;
}

/** cairn.verifier.v1.VerifierService. */
// eslint-disable-next-line max-lines-per-function -- the service's handler table: one short mapping per RPC, read whole
export function verifierHandlers(
  deps: StoredVerdictDeps & { verifyJobs: VerifyJobs },
): ImplOf<typeof verifierV1.VerifierService> {
  return {
    verify: async (request) => {
      if (request.tenantId && !isId('tenant', request.tenantId))
        throw new CairnError('cairn.validation.invalid_body', 'tenant_id must be a t_ id');
      const outcome = await verify(deps, request);
      return {
        result: toResultMessage(outcome.verdict, outcome),
        modality: modalities.toProto(outcome.modality),
        reportJson: outcome.report ? JSON.stringify(outcome.report) : '',
      };
    },
    getResult: async (request) => {
      const stored = isId('manifest', request.manifestId)
        ? await storedVerdict(deps, request.manifestId, { report: request.includeReport })
        : null;
      if (!stored)
        throw new CairnError('cairn.not_found', `No verification result for manifest ${request.manifestId}.`);
      const { result, report } = stored;
      // Only a verdict kept from before reports were kept, whose file is gone, has none: no reading is left to make it.
      if (request.includeReport && !report)
        throw new CairnError(
          'cairn.not_found',
          `No validation report is kept for manifest ${request.manifestId}: its verdict was kept before reports were, and it could not be computed again (Cairn's copy of the file is gone, or a check failed just now).`,
        );
      return {
        result: toResultMessage(result, {
          manifestId: result.manifest_id,
          assetId: result.asset_id,
          verifiedAt: result.verified_at,
        }),
        reportJson: request.includeReport && report ? JSON.stringify(report) : '',
      };
    },
    getTrustList: async (request) => {
      if (request.tenantId && !isId('tenant', request.tenantId))
        throw new CairnError('cairn.validation.invalid_body', 'tenant_id must be a t_ id');
      const custom = await deps.trust.custom(request.tenantId || undefined);
      if (custom) {
        const { lists } = await deps.trust.forTenant(request.tenantId);
        return {
          source: 'custom',
          entries: custom.map((e) => trustListEntry(e.certificate_pem, 'custom')),
          lists: lists.map((l) => snapshotMessage(l.identity)),
        };
      }
      const list = await deps.trust.defaultList();
      return {
        source: 'default',
        entries: list.entries.map((e) => trustListEntry(e.pem, e.origin)),
        lists: list.lists.map((l) => snapshotMessage(l.identity)),
        c2paTrustListSource: list.sources.c2pa,
        c2paTsaTrustListSource: list.sources.tsa,
        interimTrustListSource: list.sources.interim ?? '',
      };
    },
    enqueueVerify: async (request) => {
      if (!isId('tenant', request.tenantId))
        throw new CairnError('cairn.validation.invalid_body', 'tenant_id must be a t_ id');
      if (!request.uploadBlobKey) throw new CairnError('cairn.verify.no_input', 'upload_blob_key is required.');
      // The job reads the upload and deletes it when it ends: only one of this tenant's uploads (packages/blob keys.ts).
      if (!blobKeyOf(request.uploadBlobKey, 'upload', request.tenantId))
        throw new CairnError('cairn.validation.invalid_body', 'upload_blob_key must name an upload of this tenant.');
      return { jobId: await deps.verifyJobs.enqueue(request.tenantId, request.uploadBlobKey, request.reservationId) };
    },
    getVerifyJob: async (request) => {
      if (!isId('tenant', request.tenantId))
        throw new CairnError('cairn.validation.invalid_body', 'tenant_id must be a t_ id');
      const row = isId('job', request.jobId) ? await deps.verifyJobs.get(request.tenantId, request.jobId) : null;
      // As the signer's GetJob: absent is NOT_FOUND, never an empty answer a caller could take for a job.
      if (!row) throw new CairnError('cairn.not_found', `Job ${request.jobId} not found.`);
      return {
        job: {
          jobId: row.jobId,
          status: jobStates.toProto(row.status),
          ...(row.status === 'done' && row.result
            ? { result: fromJson(verifierV1.VerificationResultSchema, storedResultJson(row.result)) }
            : {}),
          problemJson: row.problem ? JSON.stringify(row.problem) : '',
          createdAt: toTimestamp(row.createdAt),
          updatedAt: toTimestamp(row.updatedAt),
          attempts: row.attempts,
        },
      };
    },
    setTrustList: async (request) => {
      if (!isId('tenant', request.tenantId))
        throw new CairnError('cairn.validation.invalid_body', 'tenant_id must be a t_ id');
      const { count, updatedAt } = await deps.trust.set(
        request.tenantId,
        request.entries.map((e) => ({ issuer_cn: e.issuerCn, certificate_pem: e.certificatePem })),
        actorKeyIdOf(request.actorKeyId),
      );
      return { count, updatedAt: toTimestamp(updatedAt) };
    },
  };
}
