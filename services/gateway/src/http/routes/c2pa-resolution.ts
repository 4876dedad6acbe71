import { Router, type Request, type RequestHandler, type Response } from 'express';
import { z } from 'zod';
import { BlobTooLargeError, blobKeys, PUBLIC_OWNER, type BlobStore } from '@cairn/blob';
import { FINGERPRINT_ALG, IMAGE_WATERMARK_ALGS, WATERMARK_ALG } from '@cairn/catalog';
import { CairnError } from '@cairn/errors';
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
import { referenceFetcher } from '../../adapters/reference-fetch.js';
import { addressRateLimit } from '../limits.js';
import { singleUpload, storeUpload, withUpload } from '../uploads.js';
import { jsonBody, queryParams } from '../validate.js';
import { bytes, EXAMPLE, json, jsonRequest, NOT_FOUND, operationsOf, PUBLIC } from '../openapi/describe.js';

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
  /** byReference: fetches this process runs at once (each holds up to referenceMaxBytes). */
  referenceFetchesAtOnce: number;
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

/** The OpenAPI tag of the C2PA Soft Binding Resolution API (this module's queries, c2pa-repository.ts's store). */
export const C2PA_RESOLUTION_TAG = 'C2PA Soft Binding Resolution';

const matchFound = json(200, 'Matches', { matches: [{ manifestId: EXAMPLE.manifest }] });
const contentMatchFound = json(200, 'Matches', { matches: [{ manifestId: EXAMPLE.manifest, similarityScore: 97 }] });

export const operations = operationsOf(C2PA_RESOLUTION_TAG, PUBLIC, {
  c2paMatchesByBinding: {
    route: `get ${C2PA_RESOLUTION_PREFIX}/matches/byBinding`,
    summary: 'Soft-binding matches by algorithm and value',
    query: byBindingQuery,
    answers: [matchFound],
    errors: ['cairn.validation.query_too_long', 'cairn.ratelimit.exceeded'],
  },
  c2paMatchesByBindingPost: {
    route: `post ${C2PA_RESOLUTION_PREFIX}/matches/byBinding`,
    summary: 'Soft-binding matches by value (long values in the body)',
    query: byBindingPostQuery,
    body: jsonRequest(byBindingBody, { alg: WATERMARK_ALG.syncV2, value: 'AAECAwQFBgc=' }),
    answers: [matchFound],
    errors: ['cairn.ratelimit.exceeded'],
  },
  c2paMatchesByContent: {
    route: `post ${C2PA_RESOLUTION_PREFIX}/matches/byContent`,
    summary: 'Soft-binding matches for an uploaded file',
    query: byContentQuery,
    body: {
      kind: 'multipart',
      files: { file: 'The file to look up (or send it as the raw body)' },
      required: ['file'],
    },
    answers: [contentMatchFound],
    errors: [
      'cairn.verify.unsupported_file_type',
      'cairn.validation.body_too_large',
      'cairn.ratelimit.exceeded',
      'cairn.unavailable',
    ],
  },
  c2paMatchesByReference: {
    route: `post ${C2PA_RESOLUTION_PREFIX}/matches/byReference`,
    summary: 'Soft-binding matches for an asset fetched from a URL',
    description:
      'Cairn fetches referenceUrl under its outbound address policy (private, link-local and metadata addresses refused, checked after DNS and on every redirect, at most 3 redirects), at most assetLength bytes (≤ UPLOAD_MAX_BYTES) within REFERENCE_FETCH_TIMEOUT_MS, then answers as byContent. A failed fetch is 502 naming only the class of failure. Each gateway process runs at most REFERENCE_FETCHES_AT_ONCE fetches; one more is 503 with Retry-After.',
    query: byContentQuery,
    body: jsonRequest(byReferenceBody, {
      referenceUrl: 'https://images.example.com/photo.jpg',
      assetLength: 245_760,
      assetType: 'image/jpeg',
    }),
    answers: [contentMatchFound],
    errors: [
      'cairn.resolution.fetch_failed',
      'cairn.verify.unsupported_file_type',
      'cairn.validation.body_too_large',
      'cairn.ratelimit.exceeded',
      'cairn.unavailable',
    ],
  },
  c2paGetManifest: {
    route: `get ${C2PA_RESOLUTION_PREFIX}/manifests/:manifestId`,
    summary: 'A manifest store by id',
    query: manifestQuery,
    answers: [bytes('The manifest store', 'application/c2pa')],
    errors: NOT_FOUND,
  },
  c2paCapabilities: {
    route: `get ${C2PA_RESOLUTION_PREFIX}/services/capabilities`,
    summary: 'What this resolution service supports',
    answers: [
      json(200, 'Capabilities', {
        c2paSpecificationVersion: C2PA_SPECIFICATION_VERSION,
        supportedCapabilities: SUPPORTED_CAPABILITIES,
      }),
    ],
  },
  c2paStatus: {
    route: `get ${C2PA_RESOLUTION_PREFIX}/services/status`,
    summary: 'Service status',
    answers: [json(200, 'Up', { status: 'ok' })],
    errors: ['cairn.unavailable'],
  },
  c2paSupportedAlgorithms: {
    route: `get ${C2PA_RESOLUTION_PREFIX}/services/supportedAlgorithms`,
    summary: 'Soft-binding algorithms served',
    answers: [
      json(200, 'Algorithms', {
        watermarks: IMAGE_WATERMARK_ALGS.map((alg) => ({ alg })),
        fingerprints: [{ alg: FINGERPRINT_ALG.image }],
      }),
    ],
  },
  c2paDiscovery: {
    route: `get ${C2PA_DISCOVERY_PATH}`,
    summary: 'Where the resolution API is (well-known discovery)',
    answers: [json(200, 'Discovery', { endpoints: [`https://cairn.example${C2PA_RESOLUTION_PREFIX}`] })],
  },
});

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
  const matches = `${C2PA_RESOLUTION_PREFIX}/matches`;
  router.get(`${matches}/byBinding`, queryValueFitsGet, limited, matchByBindingQuery(resolution));
  router.post(`${matches}/byBinding`, limited, matchByBindingBody(resolution));
  router.post(`${matches}/byContent`, limited, assetUpload(deps), matchByContent(resolution, deps.blobs));
  router.post(`${matches}/byReference`, limited, matchByReference(resolution));
  router.get(`${C2PA_RESOLUTION_PREFIX}/manifests/:manifestId`, serveManifest(resolution));
  router.get(`${C2PA_RESOLUTION_PREFIX}/services/capabilities`, serveCapabilities);
  router.get(`${C2PA_RESOLUTION_PREFIX}/services/status`, serveStatus(resolution));
  router.get(C2PA_DISCOVERY_PATH, serveDiscovery(resolution.apiBase));
  router.get(`${C2PA_RESOLUTION_PREFIX}/services/supportedAlgorithms`, serveSupportedAlgorithms);
  return router;
}

function answerMatches(res: Response, matches: SpecMatch[]): void {
  res.set('Cache-Control', 'no-store');
  res.json({ matches });
}

/** Checked before the rate limit: a value too long for a GET is the caller's mistake, told how to send it. */
const queryValueFitsGet: RequestHandler = (req, _res, next) => {
  const value = req.query.value;
  if (typeof value === 'string' && value.length > MAX_QUERY_VALUE_LENGTH) {
    throw new CairnError(
      'cairn.validation.query_too_long',
      `value is ${value.length} characters; a GET query carries at most ${MAX_QUERY_VALUE_LENGTH}. Send it as {"alg", "value"} to POST ${C2PA_RESOLUTION_PREFIX}/matches/byBinding.`,
    );
  }
  next();
};

/** GET /matches/byBinding: the binding in the query. */
function matchByBindingQuery(resolution: SoftBindingResolution): RequestHandler {
  return async (req, res) => {
    const query = queryParams(req, byBindingQuery);
    answerMatches(res, await resolution.byBinding(query.alg, query.value, limitOf(query.maxResults)));
  };
}

/** POST /matches/byBinding: the binding in a JSON body (values too long for a query). */
function matchByBindingBody(resolution: SoftBindingResolution): RequestHandler {
  return async (req, res) => {
    const query = queryParams(req, byBindingPostQuery);
    const body = jsonBody(req, byBindingBody, 'Send the soft binding query as application/json: {"alg", "value"}.');
    answerMatches(res, await resolution.byBinding(body.alg, body.value, limitOf(query.maxResults)));
  };
}

/** POST /matches/byContent: the asset uploaded (assetUpload). */
function matchByContent(resolution: SoftBindingResolution, blobs: BlobStore): RequestHandler {
  return async (req, res) => {
    // The upload is removed before the answer leaves: a caller who got an answer (of any kind) can rely on
    // the anonymous upload being gone, not merely scheduled for removal.
    const matches = await withUpload(blobs, req, async () => {
      const query = queryParams(req, byContentQuery);
      if (!req.upload || req.upload.size === 0)
        throw new CairnError(
          'cairn.validation.invalid_body',
          'The request body is empty; send the asset bytes (e.g. Content-Type: image/jpeg).',
        );
      return resolution.byUpload(req.upload, { alg: query.alg, limit: limitOf(query.maxResults) });
    });
    answerMatches(res, matches);
  };
}

/** POST /matches/byReference: the asset at a URL the caller names, fetched by the service. */
function matchByReference(resolution: SoftBindingResolution): RequestHandler {
  return async (req, res) => {
    const query = queryParams(req, byContentQuery);
    const body = jsonBody(
      req,
      byReferenceBody,
      'Send the reference as application/json: {"referenceUrl", "assetLength"}.',
    );
    const limit = limitOf(query.maxResults);
    answerMatches(res, await resolution.byReference(body.referenceUrl, body.assetLength, { alg: query.alg, limit }));
  };
}

/** GET /manifests/{manifestId}: the manifest store's bytes (app/c2pa-resolution.ts says which ids name one). */
function serveManifest(resolution: SoftBindingResolution): RequestHandler {
  return async (req, res) => {
    const manifestId = String(req.params.manifestId);
    const { returnActiveManifest } = queryParams(req, manifestQuery);
    const body = await resolution.manifest(manifestId, returnActiveManifest);
    // A manifest never changes once signed; a stored one can be deleted by its owner, so it is not cached for long.
    res.set({
      'Content-Type': 'application/c2pa',
      'Cache-Control': manifestId.startsWith('sm_') ? 'public, max-age=60' : 'public, max-age=31536000, immutable',
      ETag: `"${manifestId}${returnActiveManifest ? '-active' : ''}"`,
    });
    res.send(body);
  };
}

const serveCapabilities: RequestHandler = (_req, res) => {
  res.set('Cache-Control', 'public, max-age=300');
  res.json({ c2paSpecificationVersion: C2PA_SPECIFICATION_VERSION, supportedCapabilities: SUPPORTED_CAPABILITIES });
};

function serveStatus(resolution: SoftBindingResolution): RequestHandler {
  return async (_req, res) => {
    res.set('Cache-Control', 'no-store');
    res.json({ status: await resolution.status(), timestamp: new Date().toISOString() });
  };
}

/** The discovery document (RFC 8615): where the API and its service endpoints are. */
function serveDiscovery(base: string): RequestHandler {
  return (_req, res) => {
    res.set('Cache-Control', 'public, max-age=300');
    res.json({
      apiEndpoint: base,
      c2paSpecificationVersion: C2PA_SPECIFICATION_VERSION,
      capabilitiesEndpoint: `${base}/services/capabilities`,
      statusEndpoint: `${base}/services/status`,
    });
  };
}

/**
 * What Cairn resolves, from the catalogue every service shares: the image watermarks (by payload or content) and
 * the fingerprints (by value or content; the audio one by content only). No service is asked, so the list is
 * served while one is down (status says so).
 */
const serveSupportedAlgorithms: RequestHandler = (_req, res) => {
  res.set('Cache-Control', 'public, max-age=300');
  res.json({
    watermarks: IMAGE_WATERMARK_ALGS.map((alg) => ({ alg })),
    fingerprints: Object.values(FINGERPRINT_ALG).map((alg) => ({ alg })),
  });
};

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
  const info = await storeUpload(blobs, key, req, { contentType: 'application/octet-stream', maxBytes });
  req.upload = { ...info, fieldname: 'body', originalname: '' };
}
