import { Router, type Request, type RequestHandler, type Response } from 'express';
import { z } from 'zod';
import type { Scope } from '@cairn/catalog';
import type { BlobStore } from '@cairn/blob';
import { jobUrl } from '@cairn/config';
import { CairnError, parseOrThrow } from '@cairn/errors';
import { isoTimestamp, verificationStatuses, type verifierV1 } from '@cairn/proto';
import type { VerifierClient, VerifyFiles } from '../../app/verify.js';
import type { RedisRateLimiter } from '../../adapters/rate-limit.js';
import type { TenantDirectory } from '../../adapters/tenant-directory.js';
import { authenticate, requireScope } from '../auth.js';
import { invoke } from '../invoke.js';
import { addressRateLimit, tenantRateLimit } from '../limits.js';
import { fileIfMultipart, withUpload } from '../uploads.js';
import { jsonBody } from '../validate.js';
import type { UploadSessions } from '../../app/upload-sessions.js';
import { jobSchema, verificationSchema } from '../openapi/responses.js';
import {
  EXAMPLE,
  json,
  jsonRequest,
  KEY_OPTIONAL,
  needsKey,
  noContent,
  NOT_FOUND,
  operationsOf,
  type AnswerDoc,
} from '../openapi/describe.js';

export interface VerifyRouteDeps {
  blobs: BlobStore;
  verifier: VerifierClient;
  /** POST /v1/verify: metering, sync or job, the verifier call. */
  verifying: VerifyFiles;
  tenants: TenantDirectory;
  limiter: RedisRateLimiter;
  uploadMaxBytes: number;
  /** The public (unauthenticated) verify is always synchronous, and takes files up to this size. */
  publicVerifyMaxBytes: number;
  publicBaseUrl: string;
  publicVerifyPerMinute: number;
  /** An authenticated verify may name an upload session (upload_id) instead of sending the file. */
  uploadSessions: UploadSessions;
}

/** The Verification result in the API's names. */
export function presentVerification(result: verifierV1.VerificationResult): Record<string, unknown> {
  const s = result.signals;
  const c = result.claims;
  return {
    status: verificationStatuses.fromProto(result.status),
    confidence: result.confidence ?? null,
    signals: s
      ? Object.fromEntries(
          Object.entries({
            c2pa_manifest_present: s.c2paManifestPresent,
            c2pa_signature_valid: s.c2paSignatureValid,
            signer_trusted: s.signerTrusted,
            timestamp_valid: s.timestampValid,
            ocsp_status: s.ocspStatus,
            watermark_present: s.watermarkPresent,
            watermark_payload_valid: s.watermarkPayloadValid,
            fingerprint_match: s.fingerprintMatch,
            anchor_match: s.anchorMatch,
          }).filter(([, v]) => v !== undefined),
        )
      : {},
    ...(c
      ? {
          claims: Object.fromEntries(
            Object.entries({
              origin: c.origin,
              generator: c.generator,
              model: c.model,
              ai_generated: c.aiGenerated,
              ai_assisted: c.aiAssisted,
              created_at: c.createdAt,
              signed_by: c.signedBy,
              signed_at: c.signedAt,
              signing_key: c.signingKey,
            }).filter(([, v]) => v !== undefined && v !== ''),
          ),
        }
      : {}),
    matches: result.matches.map((m) => ({
      asset_id: m.assetId,
      manifest_uri: m.manifestUri,
      verifier_url: m.verifierUrl,
      via: m.via,
      similarity: m.similarity,
    })),
    warnings: result.warnings,
    developer_explanation: result.developerExplanation,
    user_explanation: result.userExplanation,
    proves: result.proves,
    does_not_prove: result.doesNotProve,
    ...(result.manifestId ? { manifest_id: result.manifestId } : {}),
    ...(result.assetId ? { asset_id: result.assetId } : {}),
    verified_at: isoTimestamp(result.verifiedAt),
  };
}

/** `format`: `crjson` for the C2PA validation report, `verdict` (the default) for Cairn's verdict. */
export const verifyQuery = z.object({ format: z.enum(['crjson', 'verdict']).optional() });

/** crJSON is JSON-LD; the C2PA registers no media type of its own for it. */
export const CRJSON_MEDIA_TYPE = 'application/ld+json';

/**
 * Whether the client asked for the C2PA validation report (crJSON) instead of Cairn's verdict: `?format=crjson`, or
 * `Accept: application/ld+json` preferred over JSON. `?format=verdict` (or no preference) is the verdict, unchanged.
 */
export function wantsReport(req: Request): boolean {
  const { format } = parseOrThrow(verifyQuery, req.query, 'query parameters');
  if (format) return format === 'crjson';
  return req.accepts(['application/json', CRJSON_MEDIA_TYPE]) === CRJSON_MEDIA_TYPE;
}

/** The report as received from the verifier (crJSON text), with the media type that says what it is. */
function sendReport(res: Response, reportJson: string | undefined): void {
  if (!reportJson) throw new CairnError('cairn.internal_error', 'The verifier answered no validation report.');
  res.type(CRJSON_MEDIA_TYPE).send(reportJson);
}

export const jsonInput = z
  .object({
    asset_id: z.string().trim().min(1).max(64).optional(),
    manifest_uri: z.string().trim().min(1).max(2048).optional(),
  })
  .strict();

export const trustListBody = z.object({
  entries: z
    .array(z.object({ issuer_cn: z.string().trim().min(1).max(200), certificate_pem: z.string().min(1).max(20_000) }))
    .min(1)
    .max(100),
});

const verificationExample = {
  status: 'verified_manifest_and_watermark_match',
  confidence: 0.99,
  signals: {
    c2pa_manifest_present: true,
    c2pa_signature_valid: true,
    signer_trusted: true,
    watermark_present: true,
    watermark_payload_valid: true,
  },
  claims: { generator: 'Cairn', ai_generated: true, signed_by: 'Cairn Demo', signed_at: EXAMPLE.time },
  matches: [],
  warnings: [],
  developer_explanation: 'The C2PA signature is valid and the watermark payload matches the manifest record.',
  user_explanation: 'This file carries intact provenance from Cairn Demo.',
  proves: ['The file was signed by Cairn Demo and not changed since.'],
  does_not_prove: ['That what the file shows is true.'],
  manifest_id: EXAMPLE.manifest,
  asset_id: EXAMPLE.asset,
  verified_at: EXAMPLE.time,
};

/** `?format=crjson` or `Accept: application/ld+json`: the C2PA validation report (docs/api.md, "Validation report"). */
const crJsonAnswer: AnswerDoc = {
  status: 200,
  description:
    'format=crjson or Accept: application/ld+json: the C2PA validation report of the same reading, a crJSON document (C2PA 2.4)',
  contentType: CRJSON_MEDIA_TYPE,
};

export const operations = operationsOf('Verification', {
  verify: {
    route: 'post /v1/verify',
    summary: 'Verify a file, an asset_id or a manifest_uri (public without a key)',
    auth: KEY_OPTIONAL,
    headers: [{ name: 'Prefer', required: false, description: 'respond-async: verify as a job (with a key)' }],
    query: verifyQuery,
    body: jsonRequest(jsonInput, { asset_id: EXAMPLE.asset }),
    answers: [
      json(200, 'The verification (a failed check is a 200 with its status)', verificationExample, verificationSchema),
      crJsonAnswer,
      json(
        202,
        'Accepted as a job (with a key, large or Prefer: respond-async)',
        { job_id: EXAMPLE.job, kind: 'verify', status: 'queued' },
        jobSchema,
      ),
    ],
    errors: [
      'cairn.verify.no_input',
      'cairn.verify.unsupported_file_type',
      'cairn.validation.body_too_large',
      'cairn.not_found',
      'cairn.auth.invalid_key',
      'cairn.auth.forbidden',
      'cairn.ratelimit.exceeded',
      'cairn.billing.quota_exceeded',
      'cairn.unavailable',
    ],
  },
  verifyManifest: {
    route: 'get /v1/verify/:manifest_id',
    summary: 'Verify a stored manifest by id',
    auth: needsKey('read'),
    query: verifyQuery,
    answers: [json(200, 'The verification', verificationExample, verificationSchema), crJsonAnswer],
    errors: NOT_FOUND,
  },
  getTrustList: {
    route: 'get /v1/trust-list',
    summary: 'Read the trust list verification uses',
    auth: KEY_OPTIONAL,
    answers: [
      json(200, 'The trust list', {
        entries: [
          {
            subject: 'CN=Cairn Demo CA',
            origin: 'default',
            sha256_fingerprint: 'ab12…',
            not_after: '2030-01-01T00:00:00Z',
          },
        ],
      }),
    ],
    errors: ['cairn.auth.invalid_key'],
  },
  setTrustList: {
    route: 'post /v1/trust-list',
    summary: 'Set a custom trust list (Enterprise)',
    auth: needsKey('admin'),
    body: jsonRequest(trustListBody, {
      entries: [{ issuer_cn: 'Example Root CA', certificate_pem: '-----BEGIN CERTIFICATE-----\n…' }],
    }),
    answers: [json(200, 'Stored', { tenant_id: EXAMPLE.tenant, count: 1, updated_at: EXAMPLE.time })],
    errors: ['cairn.auth.forbidden'],
  },
  clearTrustList: {
    route: 'delete /v1/trust-list',
    summary: 'Remove the custom trust list: verification uses the default list again',
    auth: needsKey('admin'),
    answers: [noContent],
  },
});

export function verifyRoutes(deps: VerifyRouteDeps): Router {
  const router = Router();
  const keyed = (scope: Scope) => [authenticate(deps.tenants), tenantRateLimit(deps.limiter), requireScope(scope)];
  const publicVerifyLimit = addressRateLimit(deps.limiter, 'public-verify', {
    limit: deps.publicVerifyPerMinute,
    windowSeconds: 60,
  });
  // A key makes it an authenticated (tenant-scoped, metered) verify; without one it is the public verify.
  router.post('/v1/verify', keyOr(deps, 'verify', publicVerifyLimit), verifyUpload(deps), verifyAsset(deps));
  router.get('/v1/verify/:manifest_id', ...keyed('read'), serveStoredVerdict(deps.verifier));
  // What a verify trusts: with a key, the list in force for that tenant (its own, or the default); without one,
  // the default list every public verify uses.
  router.get(
    '/v1/trust-list',
    keyOr(deps, 'read', (_req, _res, next) => next()),
    serveTrustList(deps.verifier),
  );
  router.post('/v1/trust-list', ...keyed('admin'), setTrustList(deps.verifier));
  // Back to the default list. Any plan: a tenant that left Enterprise must still be able to drop the list it set.
  router.delete('/v1/trust-list', ...keyed('admin'), resetTrustList(deps.verifier));
  return router;
}

/**
 * With an Authorization header: the key authenticated, the tenant's rate limit, and a scope granting `scope`;
 * without one, `otherwise` (the route's answer to anyone).
 */
function keyOr(deps: VerifyRouteDeps, scope: Scope, otherwise: RequestHandler): RequestHandler {
  const authenticated = authenticate(deps.tenants);
  const tenantLimit = tenantRateLimit(deps.limiter);
  const scoped = requireScope(scope);
  return (req, res, next) => {
    if (!req.header('authorization')) return invoke(otherwise, req, res, next);
    invoke(authenticated, req, res, (error?: unknown) =>
      error
        ? next(error)
        : invoke(tenantLimit, req, res, (limited?: unknown) =>
            limited ? next(limited) : invoke(scoped, req, res, next),
          ),
    );
  };
}

/** A multipart body's file (field "file"), cut at the public verify's smaller limit when no key was given. */
function verifyUpload(deps: VerifyRouteDeps): RequestHandler {
  return fileIfMultipart((req) => ({
    blobs: deps.blobs,
    field: 'file',
    maxBytes: req.auth ? deps.uploadMaxBytes : Math.min(deps.uploadMaxBytes, deps.publicVerifyMaxBytes),
    tooLarge: 'cairn.validation.body_too_large',
    sessions: deps.uploadSessions,
  }));
}

/** What POST /v1/verify verifies: the uploaded file, or exactly one of a JSON body's asset_id and manifest_uri. */
function verifyInput(req: Request): verifierV1.VerifyRequest['input'] {
  if (req.upload) {
    if (req.upload.size === 0) throw new CairnError('cairn.verify.no_input', 'The file is empty.');
    return { case: 'uploadBlobKey', value: req.upload.key };
  }
  const body = req.is('application/json') ? parseOrThrow(jsonInput, req.body ?? {}, 'request body') : {};
  const given = [body.asset_id, body.manifest_uri].filter(Boolean).length;
  if (given === 0)
    throw new CairnError(
      'cairn.verify.no_input',
      'Send exactly one of: a file (multipart field "file"), {"asset_id"} or {"manifest_uri"}.',
    );
  if (given > 1) throw new CairnError('cairn.validation.invalid_body', 'Send only one of asset_id and manifest_uri.');
  if (!body.asset_id) return { case: 'manifestUri', value: body.manifest_uri! };
  if (!req.auth?.tenant.tenantId)
    throw new CairnError(
      'cairn.auth.invalid_key',
      'Verifying by asset_id needs an API key of the asset’s tenant; anyone can verify the file or its manifest_uri.',
    );
  return { case: 'assetId', value: body.asset_id };
}

/** POST /v1/verify: the use case (app/verify.ts); the verdict or report now, or 202 with the job. */
function verifyAsset(deps: VerifyRouteDeps): RequestHandler {
  return async (req, res) => {
    await withUpload(deps.blobs, req, async (handOver) => {
      const report = wantsReport(req);
      res.vary('Accept');
      const respondAsync = /(^|[\s,;])respond-async([\s,;]|$)/i.test(req.header('prefer') ?? '');
      const outcome = await deps.verifying.verify({
        tenant: req.auth?.tenant,
        input: verifyInput(req),
        upload: req.upload,
        respondAsync,
        onUploadHandedOver: handOver,
        report,
      });
      if (outcome.kind === 'job') {
        // 202 now, the Verification result from GET /v1/jobs/{id} and verification.completed later (RFC 7240).
        const pollUrl = jobUrl(deps.publicBaseUrl, outcome.jobId);
        res
          .status(202)
          .set({ Location: pollUrl, ...(respondAsync ? { 'Preference-Applied': 'respond-async' } : {}) })
          .json({ job_id: outcome.jobId, poll_url: pollUrl });
        return;
      }
      if (report) sendReport(res, outcome.reportJson);
      else res.json(presentVerification(outcome.result));
    });
  };
}

/** GET /v1/verify/{manifest_id}: the verdict (or report) the verifier stored for a manifest of the tenant's. */
function serveStoredVerdict(verifier: VerifierClient): RequestHandler {
  return async (req, res) => {
    const report = wantsReport(req);
    const { result, reportJson } = await verifier.getResult(
      { manifestId: String(req.params.manifest_id), includeReport: report },
      { deadlineMs: 60_000 },
    );
    if (!result) throw new CairnError('cairn.not_found');
    res.set('Cache-Control', 'private, max-age=60').vary('Accept');
    if (report) sendReport(res, reportJson);
    else res.json(presentVerification(result));
  };
}

/** GET /v1/trust-list. */
function serveTrustList(verifier: VerifierClient): RequestHandler {
  return async (req, res) => {
    const list = await verifier.getTrustList({ tenantId: req.auth?.tenant.tenantId ?? '' });
    res.set('Cache-Control', req.auth ? 'private, max-age=60' : 'public, max-age=300');
    res.json(presentTrustList(list));
  };
}

/** The trust list in the API's names. */
function presentTrustList(list: verifierV1.GetTrustListResponse): Record<string, unknown> {
  return {
    source: list.source,
    count: list.entries.length,
    ...(list.source === 'default'
      ? {
          published_lists: {
            c2pa_trust_list: list.c2paTrustListSource,
            c2pa_tsa_trust_list: list.c2paTsaTrustListSource,
            ...(list.interimTrustListSource ? { interim_trust_list: list.interimTrustListSource } : {}),
          },
        }
      : {}),
    lists: list.lists.map((l) => ({
      list: l.list,
      name: l.name,
      source: l.source,
      ...(l.issuedAt ? { issued_at: isoTimestamp(l.issuedAt) } : {}),
      sha256: l.sha256,
      certificates: l.certificates,
      ...(l.loadedAt ? { loaded_at: isoTimestamp(l.loadedAt) } : {}),
      ...(l.frozen ? { frozen: true } : {}),
    })),
    entries: list.entries.map((e) => ({
      subject: e.subject,
      origin: e.origin,
      sha256_fingerprint: e.sha256Fingerprint,
      not_after: isoTimestamp(e.notAfter),
    })),
  };
}

/** POST /v1/trust-list: an Enterprise tenant's own list replaces the default for its verifies. */
function setTrustList(verifier: VerifierClient): RequestHandler {
  return async (req, res) => {
    const tenant = req.auth!.tenant;
    if (tenant.plan !== 'enterprise')
      throw new CairnError('cairn.auth.forbidden', 'A custom trust list is an Enterprise feature.');
    const body = jsonBody(req, trustListBody);
    const result = await verifier.setTrustList({
      tenantId: tenant.tenantId,
      entries: body.entries.map((e) => ({ issuerCn: e.issuer_cn, certificatePem: e.certificate_pem })),
      actorKeyId: req.auth!.keyId,
    });
    res.json({ tenant_id: tenant.tenantId, count: result.count, updated_at: isoTimestamp(result.updatedAt) });
  };
}

/** DELETE /v1/trust-list. */
function resetTrustList(verifier: VerifierClient): RequestHandler {
  return async (req, res) => {
    await verifier.setTrustList({ tenantId: req.auth!.tenant.tenantId, entries: [], actorKeyId: req.auth!.keyId });
    res.status(204).end();
  };
}
