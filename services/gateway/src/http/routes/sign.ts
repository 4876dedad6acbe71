import { Router } from 'express';
import { pipeline } from 'node:stream/promises';
import { z } from 'zod';
import type { GenService } from '@bufbuild/protobuf/codegenv2';
import type { BlobStore } from '@cairn/blob';
import { CairnError, parseOrThrow, parseSignMetadata } from '@cairn/errors';
import { newId } from '@cairn/ids';
import type { signerV1, tenantV1 } from '@cairn/proto';
import type { ServiceClient } from '@cairn/rpc';
import { reserveUnit, type BillingClient, type MeteredUnit } from '../../domain/metering.js';
import { requestHash } from '../../domain/request-hash.js';
import type { TenantDirectory } from '../../adapters/tenant-directory.js';
import type { SignAnswer, SignRequestStore } from '../../store/sign-requests.js';
import type { RedisConcurrencyLimiter } from '../../adapters/concurrency-limit.js';
import { requireScope } from '../auth.js';
import { discardUpload, singleUpload } from '../uploads.js';
import type { UploadSessions } from '../../app/upload-sessions.js';
import { exactLength } from '../streaming.js';
import { manifestRef } from './c2pa-resolution.js';

type SignerMethods = typeof signerV1.SignerService extends GenService<infer M> ? M : never;

export interface SignRouteDeps {
  blobs: BlobStore;
  signer: ServiceClient<SignerMethods>;
  tenants: TenantDirectory;
  signRequests: SignRequestStore;
  /** Signs in flight per tenant (SIGN_CONCURRENCY_PER_TENANT). */
  signSlots: RedisConcurrencyLimiter;
  signConcurrencyPerTenant: number;
  publicBaseUrl: string;
  /** Uploads up to this size are signed while the client waits (200); larger ones become jobs (202). */
  syncMaxBytes: number;
  uploadMaxBytes: number;
  billing: BillingClient;
  /** Files above uploadMaxBytes come by upload session: the form names its upload_id instead of the file. */
  uploadSessions: UploadSessions;
}

/** When a tenant's signs are all running, a slot usually frees within seconds. */
const SIGN_SLOT_RETRY_AFTER_SECONDS = 2;

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

/** The Sign result (and a done Job's fields) in the API's names. */
export function presentSignResult(result: signerV1.SignResponse): Record<string, unknown> {
  return {
    asset_id: result.assetId,
    ...(result.watermarkId ? { watermark_id: result.watermarkId } : {}),
    manifest_id: result.manifestId,
    manifest_uri: result.manifestUri,
    verifier_url: result.verifierUrl,
    asset_url: result.assetUrl,
    media_type: result.mediaType,
    ...(result.anchor?.batchId ? { anchor: { batch_id: result.anchor.batchId, status: result.anchor.status } } : {}),
    created_at: result.createdAt,
    expires_at: result.expiresAt,
  };
}

function recipeSpec(recipe: tenantV1.Recipe): signerV1.RecipeSpec {
  return {
    $typeName: 'cairn.signer.v1.RecipeSpec',
    recipeId: recipe.recipeId,
    mediaTypes: recipe.mediaTypes,
    watermark: recipe.layers?.watermark ?? false,
    softBinding: recipe.layers?.softBinding ?? false,
    anchor: recipe.layers?.anchor ?? false,
    digitalSourceType: recipe.ai?.digitalSourceType ?? '',
    derivedAssetDays: recipe.derivedAssetDays,
    meter: recipe.meter,
  };
}

export function signRoutes(deps: SignRouteDeps): Router {
  const router = Router();
  const base = deps.publicBaseUrl.replace(/\/$/, '');

  router.post(
    '/v1/sign',
    requireScope('sign'),
    (req, _res, next) => {
      // Before the upload is read: a request that cannot be made idempotent is refused at once.
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
    },
    singleUpload({
      blobs: deps.blobs,
      field: 'asset',
      maxBytes: deps.uploadMaxBytes,
      tooLarge: 'cairn.sign.file_too_large',
      sessions: deps.uploadSessions,
      checkFieldsBeforeFile: (fields) => {
        if (typeof fields.metadata === 'string') parseMetadataField(fields.metadata);
      },
    }),
    async (req, res) => {
      const tenant = req.auth!.tenant;
      let keepUpload = false;
      try {
        const upload = req.upload;
        if (!upload)
          throw new CairnError(
            'cairn.validation.invalid_body',
            'Send the asset as multipart/form-data in the field "asset" (or, for a large file, its upload session\'s id in the field "upload_id").',
          );
        if (upload.size === 0) throw new CairnError('cairn.validation.invalid_body', 'The asset is empty.');
        const fields = parseOrThrow(fieldsSchema, req.body ?? {}, 'form fields');
        const metadata = parseMetadataField(fields.metadata);
        const recipe = await deps.tenants.getRecipe(fields.recipe, tenant.plan);
        if (!recipe || !recipe.available) {
          throw new CairnError(
            'cairn.sign.invalid_recipe',
            recipe
              ? `Recipe ${fields.recipe} is not available on the ${tenant.plan} plan.`
              : `Recipe ${fields.recipe} does not exist; GET /v1/recipes lists them.`,
          );
        }
        const credentialId = fields.signing_credential;
        if (credentialId && tenant.plan !== 'enterprise')
          throw new CairnError(
            'cairn.auth.forbidden',
            'Signing with your own key (signing_credential) is an Enterprise feature.',
          );
        const hash = requestHash({
          file: upload.sha256,
          size: upload.size,
          recipe: recipe.recipeId,
          metadata,
          ...(credentialId ? { credential: credentialId } : {}),
        });
        const idempotencyKey = req.header('idempotency-key')!;
        // A short transaction claims the key; none is open while the sign runs (docs/design.md, "No starvation").
        const claim = await deps.signRequests.claim(tenant.tenantId, idempotencyKey, hash);
        if (claim.kind === 'busy') {
          res.set('Retry-After', String(claim.retryAfterSeconds));
          throw new CairnError(
            'cairn.idempotency.in_progress',
            `A sign with this Idempotency-Key is still running; retry after ${claim.retryAfterSeconds} s to get its answer.`,
          );
        }
        let answer: SignAnswer & { replayed: boolean };
        if (claim.kind === 'replay') answer = { ...claim.answer, replayed: true };
        else {
          const slot = await deps.signSlots.tryAcquire(`tenant:${tenant.tenantId}`, deps.signConcurrencyPerTenant);
          if (!slot) {
            await deps.signRequests.abandon(tenant.tenantId, idempotencyKey, claim.claimId);
            res.set('Retry-After', String(SIGN_SLOT_RETRY_AFTER_SECONDS));
            throw new CairnError(
              'cairn.ratelimit.exceeded',
              `This tenant already has ${deps.signConcurrencyPerTenant} signs running; retry after ${SIGN_SLOT_RETRY_AFTER_SECONDS} s.`,
            );
          }
          // Metered only when the sign really runs (never for a replay): reserved before, committed after the
          // answer is recorded, released when anything fails.
          let metered: MeteredUnit | undefined;
          // A BYOK sign is metered as byok_sign on top of its modality meter.
          let byok: MeteredUnit | undefined;
          try {
            metered = await reserveUnit(deps.billing, tenant, recipe.meter);
            if (credentialId) byok = await reserveUnit(deps.billing, tenant, 'byok_sign');
            const assetId = newId('asset');
            const sign = {
              tenantId: tenant.tenantId,
              assetId,
              recipe: recipeSpec(recipe),
              uploadBlobKey: upload.key,
              metadata,
              ...(credentialId ? { signingCredentialId: credentialId } : {}),
            };
            let ran: SignAnswer;
            if (upload.size <= deps.syncMaxBytes) {
              const result = await deps.signer.sign(sign, { deadlineMs: 120_000 });
              ran = { assetId, httpStatus: 200, body: presentSignResult(result) };
            } else {
              const job = await deps.signer.enqueueSign({
                sign: { ...sign, reservationId: metered.reservationId, byokReservationId: byok?.reservationId ?? '' },
              });
              keepUpload = true; // the signer worker reads it, then deletes it
              ran = {
                assetId,
                httpStatus: 202,
                body: { job_id: job.jobId, status: job.status, poll_url: `${base}/v1/jobs/${job.jobId}` },
              };
            }
            // False only when this claim's lease ran out and another request took it over: both signed, and
            // this client still gets the answer of the sign it asked for.
            await deps.signRequests.finish(tenant.tenantId, idempotencyKey, claim.claimId, ran);
            answer = { ...ran, replayed: false };
          } catch (error) {
            await metered?.release();
            await byok?.release();
            // The key is free again for a retry; if the database cannot say so now, the lease runs out instead.
            await deps.signRequests.abandon(tenant.tenantId, idempotencyKey, claim.claimId).catch(() => undefined);
            throw error;
          } finally {
            await slot.release();
          }
          // A job settles its own reservation when it ends (billing reads job.completed / job.failed).
          if (answer.httpStatus === 202) {
            metered.handOver();
            byok?.handOver();
          } else {
            await metered.commit();
            await byok?.commit();
          }
        }
        if (answer.replayed) res.set('Idempotent-Replayed', 'true');
        if (answer.httpStatus === 202) res.set('Location', String(answer.body.poll_url));
        res.status(answer.httpStatus).json(answer.body);
      } finally {
        if (!keepUpload) await discardUpload(deps.blobs, req);
      }
    },
  );

  router.get('/v1/assets/:asset_id/content', requireScope('read'), async (req, res) => {
    const { asset } = await deps.signer.getAsset({
      tenantId: req.auth!.tenant.tenantId,
      assetId: String(req.params.asset_id),
    });
    if (!asset) throw new CairnError('cairn.not_found', `Asset ${String(req.params.asset_id)} not found.`);
    const stream = asset.expired || !asset.blobKey ? null : await deps.blobs.get(asset.blobKey);
    if (!stream)
      throw new CairnError(
        'cairn.asset.expired',
        `Asset ${asset.assetId}'s file was deleted when its retention ended (${asset.expiresAt}); its manifest remains at /v1/manifests/${asset.manifestId}.`,
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
  });

  router.get('/v1/manifests/:manifest_id', async (req, res) => {
    const manifest = await deps.signer.getManifest(manifestRef(String(req.params.manifest_id)));
    // A manifest never changes once signed: cache it anywhere, for as long as anyone likes.
    res.set({
      'Content-Type': 'application/c2pa',
      'Cache-Control': 'public, max-age=31536000, immutable',
      ETag: `"${String(req.params.manifest_id)}"`,
    });
    res.send(Buffer.from(manifest.manifestStore));
  });

  return router;
}
