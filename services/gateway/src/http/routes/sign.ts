import { Router, type RequestHandler } from 'express';
import { pipeline } from 'node:stream/promises';
import { z } from 'zod';
import type { BlobStore } from '@cairn/blob';
import { CairnError, parseOrThrow, parseSignMetadata } from '@cairn/errors';
import { isoTimestamp } from '@cairn/proto';
import { manifestRef } from '../../app/c2pa-resolution.js';
import type { SignAssets, SignerClient } from '../../app/sign.js';
import { requireScope } from '../auth.js';
import { singleUpload, withUpload } from '../uploads.js';
import type { UploadSessions } from '../../app/upload-sessions.js';
import { exactLength } from '../streaming.js';
import { jobSchema, signResultSchema } from '../openapi/responses.js';
import {
  bytes,
  EXAMPLE,
  IDEMPOTENCY,
  json,
  needsKey,
  NOT_FOUND,
  operationsOf,
  PUBLIC,
  SIGN_RESULT_EXAMPLE,
} from '../openapi/describe.js';

export interface SignRouteDeps {
  blobs: BlobStore;
  signer: SignerClient;
  /** The sign use case (recipe rules, idempotency, concurrency, metering, the signer call). */
  signing: SignAssets;
  uploadMaxBytes: number;
  /** Files above uploadMaxBytes come by upload session: the form names its upload_id instead of the file. */
  uploadSessions: UploadSessions;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const fieldsSchema = z.object({
  recipe: z.string().trim().min(1).max(100),
  metadata: z
    .string()
    .max(32 * 1024)
    .optional(),
  /** Bring your own key (Enterprise): a registered signing credential (sc_…) signs instead of Cairn's key. */
  signing_credential: z
    .string()
    .regex(/^sc_[0-9A-HJKMNP-TV-Z]{26}$/, 'signing_credential must be a credential id (sc_…)')
    .optional(),
});

/**
 * The metadata form field, validated with the signer's own schema (packages/errors): the spec's fields only,
 * so prompt text (or any field that could carry it) is a 400 before the upload is kept, a job is created or
 * any row is written.
 */
function parseMetadataField(raw: string | undefined): Record<string, string> {
  if (raw === undefined || raw === '') return {};
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new CairnError(
      'cairn.validation.invalid_body',
      'metadata must be a JSON object (sent as a form field string).',
      { errors: [{ path: 'metadata', message: 'not JSON' }] },
    );
  }
  const metadata = parseSignMetadata(parsed);
  return Object.fromEntries(Object.entries(metadata).filter((e): e is [string, string] => typeof e[1] === 'string'));
}

export const operations = operationsOf('Signing', {
  sign: {
    route: 'post /v1/sign',
    summary: 'Sign a file with a recipe (C2PA manifest, watermark, soft binding)',
    auth: needsKey('sign'),
    headers: [IDEMPOTENCY],
    body: {
      kind: 'multipart',
      schema: fieldsSchema,
      files: { asset: 'The file to sign' },
      required: ['asset', 'recipe'],
      example: { recipe: 'photo-v1', metadata: '{"title":"Harbour at dawn"}' },
    },
    answers: [
      json(200, 'Signed (small files)', SIGN_RESULT_EXAMPLE, signResultSchema),
      json(
        202,
        'Accepted as a job; poll poll_url',
        {
          job_id: EXAMPLE.job,
          kind: 'sign',
          status: 'queued',
          poll_url: `https://cairn.example/v1/jobs/${EXAMPLE.job}`,
        },
        jobSchema,
      ),
    ],
    errors: [
      'cairn.sign.missing_idempotency_key',
      'cairn.sign.idempotency_conflict',
      'cairn.idempotency.in_progress',
      'cairn.sign.invalid_recipe',
      'cairn.sign.unsupported_mime',
      'cairn.sign.file_too_large',
      'cairn.media.too_large',
      'cairn.billing.quota_exceeded',
      'cairn.billing.spending_cap_reached',
      'cairn.signer.unavailable',
      'cairn.sign.worker_failed',
      'cairn.not_found',
    ],
  },
  downloadAsset: {
    route: 'get /v1/assets/:asset_id/content',
    summary: 'Download a signed asset',
    auth: needsKey('read'),
    answers: [bytes('The signed file', 'application/octet-stream')],
    errors: ['cairn.not_found', 'cairn.asset.expired'],
  },
  getManifest: {
    route: 'get /v1/manifests/:manifest_id',
    summary: 'Fetch a C2PA manifest store (public)',
    tag: 'Verification',
    auth: PUBLIC,
    answers: [bytes('The manifest store', 'application/c2pa')],
    errors: NOT_FOUND,
  },
});

export function signRoutes(deps: SignRouteDeps): Router {
  const router = Router();
  router.post('/v1/sign', requireScope('sign'), requireIdempotencyKey, signUpload(deps), signAsset(deps));
  router.get('/v1/assets/:asset_id/content', requireScope('read'), serveAssetContent(deps));
  router.get('/v1/manifests/:manifest_id', serveManifest(deps.signer));
  return router;
}

/** Before the upload is read: a request that cannot be made idempotent is refused at once. */
const requireIdempotencyKey: RequestHandler = (req, _res, next) => {
  const key = req.header('idempotency-key');
  if (!key)
    return next(
      new CairnError(
        'cairn.sign.missing_idempotency_key',
        'Send an Idempotency-Key header (a UUID, v7 preferred) so a retried sign never signs twice.',
      ),
    );
  if (!UUID.test(key))
    return next(
      new CairnError(
        'cairn.sign.missing_idempotency_key',
        'Idempotency-Key must be a UUID, e.g. 0190d6c8-8f4e-7a8b-9c1d-2e3f4a5b6c7d.',
      ),
    );
  next();
};

/** The asset (field "asset", or an upload session's upload_id), its metadata field checked before the file is stored. */
function signUpload(deps: SignRouteDeps): RequestHandler {
  return singleUpload({
    blobs: deps.blobs,
    field: 'asset',
    maxBytes: deps.uploadMaxBytes,
    tooLarge: 'cairn.sign.file_too_large',
    sessions: deps.uploadSessions,
    describeSpentSessions: true,
    checkFieldsBeforeFile: (fields) => {
      if (typeof fields.metadata === 'string') parseMetadataField(fields.metadata);
    },
  });
}

/** POST /v1/sign: the use case (app/sign.ts) on the stored upload; its answer, a replay's, or Retry-After. */
function signAsset(deps: SignRouteDeps): RequestHandler {
  return async (req, res) => {
    const tenant = req.auth!.tenant;
    await withUpload(deps.blobs, req, async (handOver) => {
      const upload = req.upload;
      if (!upload)
        throw new CairnError(
          'cairn.validation.invalid_body',
          'Send the asset as multipart/form-data in the field "asset" (or, for a large file, its upload session\'s id in the field "upload_id").',
        );
      if (upload.size === 0) throw new CairnError('cairn.validation.invalid_body', 'The asset is empty.');
      const fields = parseOrThrow(fieldsSchema, req.body ?? {}, 'form fields');
      const outcome = await deps.signing.sign({
        tenant,
        idempotencyKey: req.header('idempotency-key')!,
        upload,
        recipe: fields.recipe,
        metadata: parseMetadataField(fields.metadata),
        ...(fields.signing_credential ? { signingCredential: fields.signing_credential } : {}),
        onUploadHandedOver: handOver,
      });
      if (outcome.kind === 'retry_later') {
        res.set('Retry-After', String(outcome.retryAfterSeconds));
        throw outcome.error;
      }
      const { answer } = outcome;
      if (outcome.replayed) res.set('Idempotent-Replayed', 'true');
      if (answer.httpStatus === 202) res.set('Location', String(answer.body.poll_url));
      res.status(answer.httpStatus).json(answer.body);
    });
  };
}

/** GET /v1/assets/{asset_id}/content: the signed file, streamed from the blob store while its retention lasts. */
function serveAssetContent(deps: SignRouteDeps): RequestHandler {
  return async (req, res) => {
    const { asset } = await deps.signer.getAsset({
      tenantId: req.auth!.tenant.tenantId,
      assetId: String(req.params.asset_id),
    });
    if (!asset) throw new CairnError('cairn.not_found', `Asset ${String(req.params.asset_id)} not found.`);
    const stream = asset.expired || !asset.blobKey ? null : await deps.blobs.get(asset.blobKey);
    if (!stream)
      throw new CairnError(
        'cairn.asset.expired',
        `Asset ${asset.assetId}'s file was deleted when its retention ended (${isoTimestamp(asset.expiresAt)}); its manifest remains at /v1/manifests/${asset.manifestId}.`,
      );
    const extension = asset.mediaType.split('/')[1] === 'jpeg' ? 'jpg' : asset.mediaType.split('/')[1];
    res.set({
      'Content-Type': asset.mediaType,
      'Content-Length': String(asset.sizeBytes),
      'Content-Disposition': `attachment; filename="${asset.assetId}.${extension}"`,
      'Cache-Control': 'private, no-store',
    });
    // pipeline, not pipe: a source that fails or ends early destroys the response (the client sees a cut-off
    // body, never a complete-looking one) and rejects here, where the error handler logs it.
    await pipeline(stream, exactLength(Number(asset.sizeBytes)), res);
  };
}

/** GET /v1/manifests/{manifest_id}: a Cairn manifest store, by manifest id or C2PA label. */
function serveManifest(signer: SignerClient): RequestHandler {
  return async (req, res) => {
    const manifest = await signer.getManifest(manifestRef(String(req.params.manifest_id)));
    // A manifest never changes once signed: cache it anywhere, for as long as anyone likes.
    res.set({
      'Content-Type': 'application/c2pa',
      'Cache-Control': 'public, max-age=31536000, immutable',
      ETag: `"${String(req.params.manifest_id)}"`,
    });
    res.send(Buffer.from(manifest.manifestStore));
  };
}
