import { Router, type Request, type RequestHandler, type Response } from 'express';
import { z } from 'zod';
import { BlobTooLargeError, blobKeys, PUBLIC_OWNER, type BlobStore } from '@cairn/blob';
import { FINGERPRINT_ALG, IMAGE_WATERMARK_ALGS } from '@cairn/catalog';
import { CairnError, parseOrThrow } from '@cairn/errors';
import { newId } from '@cairn/ids';
import type { DestinationPolicy } from '@cairn/outbound';
import type { RedisRateLimiter } from '../../adapters/rate-limit.js';
import {
  C2PA_RESOLUTION_PREFIX,
  DEFAULT_RESULTS,
  MAX_RESULTS,
  SoftBindingResolution,
  type SignerClient,
  type SoftBindingClient,
  type SpecMatch,
  type WatermarkClient,
} from '../../app/c2pa-resolution.js';
import { ManifestRepositoryApi } from '../../app/c2pa-repository.js';
import { referenceFetcher } from '../../adapters/reference-fetch.js';
import { addressRateLimit } from '../limits.js';
import { discardUpload, singleUpload } from '../uploads.js';

export { C2PA_RESOLUTION_PREFIX } from '../../app/c2pa-resolution.js';
/** The version of the C2PA specification whose Soft Binding Resolution API these routes serve. */
export const C2PA_SPECIFICATION_VERSION = '2.4.0';
/** Discovery document of the Soft Binding Resolution API (RFC 8615), at the root of the host. */
export const C2PA_DISCOVERY_PATH = '/.well-known/c2pa-soft-binding-resolution';
/** Longest `value` a GET query carries (the API's maxQueryValueLength); longer ones go in a POST body. */
const MAX_QUERY_VALUE_LENGTH = 2048;
/** What the spec's capabilities list names, for what these routes (and c2pa-repository.ts) serve. */
export const SUPPORTED_CAPABILITIES = ['queryByContent', 'queryByReference', 'storeManifests', 'storeBindings'];

export interface C2paResolutionDeps {
  blobs: BlobStore;
  softbinding: SoftBindingClient;
  signer: SignerClient;
  watermark: WatermarkClient;
  limiter: RedisRateLimiter;
  publicBaseUrl: string;
  uploadMaxBytes: number;
  /** Unauthenticated queries per client address per minute (manifest fetches and the algorithm list are free). */
  perMinute: number;
  /** The outbound address policy byReference fetches under. */
  outbound: DestinationPolicy;
  /** byReference: the whole fetch of the referenced asset. */
  referenceTimeoutMs: number;
  /** byReference: the largest asset fetched (held in memory while it is read, so smaller than uploads). */
  referenceMaxBytes: number;
}

/**
 * maxResults per the spec: an integer ≥ 1, default 10. Larger values are served as the service's maximum
 * (the spec sets no upper bound, so they are not an error).
 */
const maxResults = z.coerce
  .number({ message: 'maxResults must be an integer ≥ 1' })
  .int('maxResults must be an integer ≥ 1')
  .min(1, 'maxResults must be an integer ≥ 1')
  .optional();
const algName = z.string().trim().min(1, 'alg must not be empty').max(128);
export const byBindingQuery = z.object({
  alg: algName,
  value: z.string().trim().min(1, 'value must not be empty').max(4096),
  maxResults,
});
export const byContentQuery = z.object({
  alg: algName.optional(),
  maxResults,
  hintAlg: z.string().max(128).optional(),
  hintValue: z.string().max(4096).optional(),
});
export const byBindingPostQuery = z.object({ maxResults });
export const byBindingBody = z.object({
  alg: algName,
  value: z
    .string()
    .trim()
    .min(1, 'value must not be empty')
    .max(64 * 1024),
});
/**
 * The spec's byReference body. `assetType` and `region` are accepted: the type is sniffed from the bytes fetched
 * (never trusted from the caller), and regions are not used (Cairn's fingerprints are of the whole asset).
 */
export const byReferenceBody = z.object({
  referenceUrl: z
    .string()
    .max(2048)
    .url('referenceUrl must be an absolute URL')
    .refine((u) => /^https?:/i.test(u), 'referenceUrl must be http(s)'),
  assetLength: z.number().int('assetLength must be an integer').positive('assetLength must be > 0'),
  assetType: z.string().max(128).optional(),
  region: z.array(z.record(z.string(), z.unknown())).max(16).optional(),
});
export const manifestQuery = z.object({
  returnActiveManifest: z
    .enum(['true', 'false', '1', '0'], { message: 'returnActiveManifest must be true or false' })
    .optional()
    .transform((v) => v === 'true' || v === '1'),
});

/** The spec's media type ranges for an uploaded asset (requestBody of `POST /matches/byContent`). */
const ASSET_TYPES = /^(image|audio|video|application|model|text)\/[\w.+-]+$/i;

const limitOf = (maxResults: number | undefined) => Math.min(maxResults ?? DEFAULT_RESULTS, MAX_RESULTS);

/**
 * The C2PA Soft Binding Resolution API (C2PA 2.x "Soft Binding API" document, §1.4, OpenAPI
 * `C2PA Soft Binding Resolution API`): query, fetch and service routes, public and unauthenticated: a C2PA
 * client that holds a watermark payload, a fingerprint or the stripped asset finds the manifest it came with.
 * Every answer comes from the public lookups (no tenant ids, no storage locations); Problem+JSON on errors. The use
 * cases are app/c2pa-resolution.ts; the store routes (keyed) are c2pa-repository.ts.
 */
export function c2paResolutionRoutes(deps: C2paResolutionDeps): Router {
  const router = Router();
  const limited = addressRateLimit(deps.limiter, 'c2pa-resolution', { limit: deps.perMinute, windowSeconds: 60 });
  const resolution = new SoftBindingResolution({
    ...deps,
    fetchReference: referenceFetcher({ policy: deps.outbound, timeoutMs: deps.referenceTimeoutMs }),
  });
  const repository = new ManifestRepositoryApi(deps.softbinding, resolution.apiBase);
  const base = resolution.apiBase;
  const answer = (res: Response, matches: SpecMatch[]) => {
    res.set('Cache-Control', 'no-store');
    res.json({ matches });
  };

  router.get(`${C2PA_RESOLUTION_PREFIX}/matches/byBinding`, (req, _res, next) => {
    const value = req.query.value;
    if (typeof value === 'string' && value.length > MAX_QUERY_VALUE_LENGTH) {
      throw new CairnError(
        'cairn.validation.query_too_long',
        `value is ${value.length} characters; a GET query carries at most ${MAX_QUERY_VALUE_LENGTH}. Send it as {"alg", "value"} to POST ${C2PA_RESOLUTION_PREFIX}/matches/byBinding.`,
      );
    }
    next();
  });
  router.get(`${C2PA_RESOLUTION_PREFIX}/matches/byBinding`, limited, async (req, res) => {
    const query = parseOrThrow(byBindingQuery, req.query, 'query parameters');
    answer(res, await resolution.byBinding(query.alg, query.value, limitOf(query.maxResults)));
  });

  router.post(`${C2PA_RESOLUTION_PREFIX}/matches/byBinding`, limited, async (req, res) => {
    const query = parseOrThrow(byBindingPostQuery, req.query, 'query parameters');
    if (!req.is('application/json'))
      throw new CairnError(
        'cairn.validation.unsupported_media_type',
        'Send the soft binding query as application/json: {"alg", "value"}.',
      );
    const body = parseOrThrow(byBindingBody, req.body ?? {}, 'request body');
    answer(res, await resolution.byBinding(body.alg, body.value, limitOf(query.maxResults)));
  });

  router.post(`${C2PA_RESOLUTION_PREFIX}/matches/byContent`, limited, assetUpload(deps), async (req, res) => {
    let matches: SpecMatch[];
    // The upload is removed before the answer leaves: a caller who got an answer (of any kind) can rely on
    // the anonymous upload being gone, not merely scheduled for removal.
    try {
      const query = parseOrThrow(byContentQuery, req.query, 'query parameters');
      if (!req.upload || req.upload.size === 0)
        throw new CairnError(
          'cairn.validation.invalid_body',
          'The request body is empty; send the asset bytes (e.g. Content-Type: image/jpeg).',
        );
      matches = await resolution.byUpload(req.upload.key, { alg: query.alg, limit: limitOf(query.maxResults) });
    } finally {
      await discardUpload(deps.blobs, req);
    }
    answer(res, matches);
  });

  router.post(`${C2PA_RESOLUTION_PREFIX}/matches/byReference`, limited, async (req, res) => {
    const query = parseOrThrow(byContentQuery, req.query, 'query parameters');
    if (!req.is('application/json'))
      throw new CairnError(
        'cairn.validation.unsupported_media_type',
        'Send the reference as application/json: {"referenceUrl", "assetLength"}.',
      );
    const body = parseOrThrow(byReferenceBody, req.body ?? {}, 'request body');
    if (body.assetLength > deps.referenceMaxBytes)
      throw new CairnError(
        'cairn.validation.body_too_large',
        `assetLength is over the ${Math.round(deps.referenceMaxBytes / (1024 * 1024))} MB this service fetches; upload the asset to POST ${C2PA_RESOLUTION_PREFIX}/matches/byContent instead.`,
      );
    const upload = await resolution.fetchReference(body.referenceUrl, body.assetLength);
    let matches: SpecMatch[];
    try {
      matches = await resolution.byUpload(upload.key, { alg: query.alg, limit: limitOf(query.maxResults) });
    } finally {
      // Best effort, as for byContent's upload: the answer does not depend on it; a failed delete leaves an
      // unreferenced public upload behind.
      await deps.blobs.delete(upload.key).catch(() => undefined);
    }
    answer(res, matches);
  });

  router.get(`${C2PA_RESOLUTION_PREFIX}/manifests/:manifestId`, async (req, res) => {
    // Cairn's manifest id (m_…, as in matches), the C2PA manifest label a client reads from the file (urn:c2pa:…),
    // or a stored manifest's id (sm_…); anything else is a manifest this repository does not hold: 404.
    const manifestId = String(req.params.manifestId);
    const { returnActiveManifest } = parseOrThrow(manifestQuery, req.query, 'query parameters');
    // A stored manifest is served exactly as uploaded (the spec's round trip); returnActiveManifest applies to
    // Cairn's own, which the signer cuts down (it owns the stores, the gateway only passes bytes).
    const body =
      (await repository.manifest(manifestId)) ??
      Buffer.from(
        (await deps.signer.getManifest({ ...manifestRef(manifestId), activeManifestOnly: returnActiveManifest }))
          .manifestStore,
      );
    // A manifest never changes once signed; a stored one can be deleted by its owner, so it is not cached for long.
    res.set({
      'Content-Type': 'application/c2pa',
      'Cache-Control': manifestId.startsWith('sm_') ? 'public, max-age=60' : 'public, max-age=31536000, immutable',
      ETag: `"${manifestId}${returnActiveManifest ? '-active' : ''}"`,
    });
    res.send(body);
  });

  router.get(`${C2PA_RESOLUTION_PREFIX}/services/capabilities`, (_req, res) => {
    res.set('Cache-Control', 'public, max-age=300');
    res.json({ c2paSpecificationVersion: C2PA_SPECIFICATION_VERSION, supportedCapabilities: SUPPORTED_CAPABILITIES });
  });

  router.get(`${C2PA_RESOLUTION_PREFIX}/services/status`, async (_req, res) => {
    res.set('Cache-Control', 'no-store');
    res.json({ status: await resolution.status(), timestamp: new Date().toISOString() });
  });

  router.get(C2PA_DISCOVERY_PATH, (_req, res) => {
    res.set('Cache-Control', 'public, max-age=300');
    res.json({
      apiEndpoint: base,
      c2paSpecificationVersion: C2PA_SPECIFICATION_VERSION,
      capabilitiesEndpoint: `${base}/services/capabilities`,
      statusEndpoint: `${base}/services/status`,
    });
  });

  // What Cairn resolves, from the catalogue every service shares: the image watermarks (by payload or content) and
  // the fingerprints (by value or content; the audio one by content only). No service is asked, so the list is
  // served while one is down (status says so).
  router.get(`${C2PA_RESOLUTION_PREFIX}/services/supportedAlgorithms`, (_req, res) => {
    res.set('Cache-Control', 'public, max-age=300');
    res.json({
      watermarks: IMAGE_WATERMARK_ALGS.map((alg) => ({ alg })),
      fingerprints: Object.values(FINGERPRINT_ALG).map((alg) => ({ alg })),
    });
  });

  return router;
}

/** A manifest named in a path: Cairn's manifest id, or the C2PA manifest label of its active manifest. */
export function manifestRef(param: string): { manifestId: string } | { label: string } {
  return param.startsWith('urn:') ? { label: param } : { manifestId: param };
}

/**
 * The request body as a stored upload: the raw asset bytes (the spec's form: Content-Type image/*, audio/*, …),
 * or for convenience a multipart body with the file in "file". Streamed into the blob store, cut at the upload
 * limit; the route deletes it when done.
 */
function assetUpload(deps: Pick<C2paResolutionDeps, 'blobs' | 'uploadMaxBytes'>): RequestHandler {
  const multipart = singleUpload({
    blobs: deps.blobs,
    field: 'file',
    maxBytes: deps.uploadMaxBytes,
    tooLarge: 'cairn.validation.body_too_large',
  });
  const limitText = `${Math.round(deps.uploadMaxBytes / (1024 * 1024))} MB`;
  return (req, res, next) => {
    if (req.is('multipart/form-data')) return multipart(req, res, next);
    const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim();
    if (!ASSET_TYPES.test(type) || /^application\/(json|x-www-form-urlencoded)$/i.test(type)) {
      req.resume();
      return next(
        new CairnError(
          'cairn.validation.unsupported_media_type',
          'Send the asset itself as the body, with its media type as Content-Type (e.g. image/jpeg).',
        ),
      );
    }
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > deps.uploadMaxBytes) {
      req.resume();
      return next(
        new CairnError('cairn.validation.body_too_large', `The asset is larger than the ${limitText} upload limit.`),
      );
    }
    storeRaw(deps.blobs, req, deps.uploadMaxBytes).then(
      () => next(),
      (error: unknown) => {
        req.resume();
        next(
          error instanceof BlobTooLargeError
            ? new CairnError(
                'cairn.validation.body_too_large',
                `The asset is larger than the ${limitText} upload limit.`,
              )
            : error,
        );
      },
    );
  };
}

async function storeRaw(blobs: BlobStore, req: Request, maxBytes: number): Promise<void> {
  const key = blobKeys.upload(PUBLIC_OWNER, newId('request').slice(4));
  const info = await blobs.put(key, req, { contentType: 'application/octet-stream', maxBytes });
  req.upload = { ...info, fieldname: 'body', originalname: '' };
}
