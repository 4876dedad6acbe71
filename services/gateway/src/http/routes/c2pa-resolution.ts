import { Router, type Request, type RequestHandler } from 'express';
import { z } from 'zod';
import type { GenService } from '@bufbuild/protobuf/codegenv2';
import { BlobTooLargeError, blobKeys, PUBLIC_OWNER, type BlobStore } from '@cairn/blob';
import { IMAGE_WATERMARK_ALGS, isImageWatermarkAlg, type ImageWatermarkAlg } from '@cairn/catalog';
import { absentAsUndefined, CairnError, isCairnError, parseOrThrow } from '@cairn/errors';
import { isId, newId } from '@cairn/ids';
import { sniffMediaType } from '@cairn/sniff';
import type { signerV1, softbindingV1, watermarkV1 } from '@cairn/proto';
import type { ServiceClient } from '@cairn/rpc';
import type { RedisRateLimiter } from '../../adapters/rate-limit.js';
import { addressRateLimit } from '../limits.js';
import { discardUpload, singleUpload } from '../uploads.js';
import { uploadHead } from '../../adapters/upload-head.js';

type SoftBindingMethods = typeof softbindingV1.SoftBindingService extends GenService<infer M> ? M : never;
type SignerMethods = typeof signerV1.SignerService extends GenService<infer M> ? M : never;
type WatermarkMethods = typeof watermarkV1.WatermarkService extends GenService<infer M> ? M : never;

/** Where the C2PA Soft Binding Resolution API lives: its own version segment, like the spec's `…/v1` server URL. */
export const C2PA_RESOLUTION_PREFIX = '/c2pa/v1';
/** The version of the C2PA specification whose Soft Binding Resolution API these routes serve. */
export const C2PA_SPECIFICATION_VERSION = '2.4.0';
/** Discovery document of the Soft Binding Resolution API (RFC 8615), at the root of the host. */
export const C2PA_DISCOVERY_PATH = '/.well-known/c2pa-soft-binding-resolution';
/** Longest `value` a GET query carries (the API's maxQueryValueLength); longer ones go in a POST body. */
const MAX_QUERY_VALUE_LENGTH = 2048;

/**
 * The invisible watermarks served are the image marks of the watermark service (@cairn/catalog), as recorded in each
 * manifest: cairn-sync-v2, which new signs carry, and the earlier keyed and keyless ones (still resolved). A query
 * naming one matches its marks only.
 */
const WATERMARK_PAYLOAD_BYTES = 8;

/** Matches per query when the caller gives no maxResults (the spec's default), and the most we ever return. */
const DEFAULT_RESULTS = 10;
const MAX_RESULTS = 100;

export interface C2paResolutionDeps {
  blobs: BlobStore;
  softbinding: ServiceClient<SoftBindingMethods>;
  signer: ServiceClient<SignerMethods>;
  watermark: ServiceClient<WatermarkMethods>;
  limiter: RedisRateLimiter;
  publicBaseUrl: string;
  uploadMaxBytes: number;
  /** Unauthenticated queries per client address per minute (manifest fetches and the algorithm list are free). */
  perMinute: number;
}

/** One match in the spec's `c2pa.softBindingQueryResult` shape: public fields only. */
interface SpecMatch {
  manifestId: string;
  endpoint: string;
  similarityScore?: number;
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
export const manifestQuery = z.object({
  returnActiveManifest: z
    .enum(['true', 'false', '1', '0'], { message: 'returnActiveManifest must be true or false' })
    .optional()
    .transform((v) => v === 'true' || v === '1'),
});

/** The spec's media type ranges for an uploaded asset (requestBody of `POST /matches/byContent`). */
const ASSET_TYPES = /^(image|audio|video|application|model|text)\/[\w.+-]+$/i;

/**
 * The C2PA Soft Binding Resolution API (C2PA 2.x "Soft Binding API" document, §1.4, OpenAPI
 * `C2PA Soft Binding Resolution API`), query, fetch and service routes, public and unauthenticated: a C2PA
 * client that holds a watermark payload, a fingerprint or the stripped asset finds the manifest it came with.
 * Every answer comes from the public lookups (no tenant ids, no storage locations); Problem+JSON on errors.
 */
export function c2paResolutionRoutes(deps: C2paResolutionDeps): Router {
  const router = Router();
  const base = `${deps.publicBaseUrl.replace(/\/$/, '')}${C2PA_RESOLUTION_PREFIX}`;
  const limited = addressRateLimit(deps.limiter, 'c2pa-resolution', { limit: deps.perMinute, windowSeconds: 60 });
  const algorithms = supportedAlgorithmsCache(deps.softbinding);

  const match = (manifestId: string, similarity: number | undefined): SpecMatch => ({
    manifestId,
    endpoint: base,
    ...(similarity === undefined ? {} : { similarityScore: Math.max(0, Math.min(100, Math.round(similarity * 100))) }),
  });

  /** Fingerprint matches from the public Lookup, as spec matches (one per manifest, best first). */
  const fingerprintMatches = async (
    query: softbindingV1.LookupRequest['query'],
    limit: number,
    alg?: string,
  ): Promise<SpecMatch[]> => {
    const { matches } = await deps.softbinding.lookup({ tenantId: '', query, limit }, { deadlineMs: 30_000 });
    // The service picks the algorithm from the content; a caller who named one gets that one's matches only.
    return matches.flatMap((m) => {
      if (alg !== undefined && m.alg && m.alg !== alg) return [];
      const id = manifestIdOf(m.manifestUri);
      return id ? [match(id, m.similarity)] : [];
    });
  };

  /** A registered watermark payload of algorithm `alg` → the manifest of the asset it was embedded in. */
  const watermarkMatch = async (
    payloadHex: string,
    alg: string,
    confidence: number | undefined,
  ): Promise<SpecMatch[]> => {
    const mark = await deps.watermark.resolvePayload({ payloadHex }, { deadlineMs: 10_000 });
    if (!mark.registered || mark.algorithm !== alg || !isId('asset', mark.assetId)) return [];
    const asset = await deps.signer.getPublicAsset({ assetId: mark.assetId }).then((r) => r.asset, absentAsUndefined);
    return asset?.manifestId ? [match(asset.manifestId, confidence)] : [];
  };

  const byBinding = async (alg: string, value: string, limit: number): Promise<SpecMatch[]> => {
    if (isImageWatermarkAlg(alg))
      return watermarkMatch(bindingBytes(value, WATERMARK_PAYLOAD_BYTES, alg).toString('hex'), alg, undefined);
    const known = (await algorithms()).find((a) => a.alg === alg && a.kind === 'fingerprint');
    if (!known)
      throw new CairnError(
        'cairn.validation.invalid_body',
        `Unsupported soft binding algorithm "${alg}"; GET ${C2PA_RESOLUTION_PREFIX}/services/supportedAlgorithms lists the supported ones.`,
      );
    if (known.valueHexDigits <= 0)
      throw new CairnError(
        'cairn.validation.invalid_body',
        `${alg} is looked up by content only (POST ${C2PA_RESOLUTION_PREFIX}/matches/byContent).`,
      );
    const hex = bindingBytes(value, known.valueHexDigits / 2, alg).toString('hex');
    return fingerprintMatches(
      { case: 'binding', value: { alg, value: hex, $typeName: 'cairn.softbinding.v1.Binding' } },
      limit,
    );
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
    const limit = Math.min(query.maxResults ?? DEFAULT_RESULTS, MAX_RESULTS);
    res.set('Cache-Control', 'no-store');
    res.json({ matches: distinct(await byBinding(query.alg, query.value, limit), limit) });
  });

  router.post(`${C2PA_RESOLUTION_PREFIX}/matches/byBinding`, limited, async (req, res) => {
    const query = parseOrThrow(byBindingPostQuery, req.query, 'query parameters');
    if (!req.is('application/json'))
      throw new CairnError(
        'cairn.validation.unsupported_media_type',
        'Send the soft binding query as application/json: {"alg", "value"}.',
      );
    const body = parseOrThrow(byBindingBody, req.body ?? {}, 'request body');
    const limit = Math.min(query.maxResults ?? DEFAULT_RESULTS, MAX_RESULTS);
    res.set('Cache-Control', 'no-store');
    res.json({ matches: distinct(await byBinding(body.alg, body.value, limit), limit) });
  });

  router.post(`${C2PA_RESOLUTION_PREFIX}/matches/byContent`, limited, assetUpload(deps), async (req, res) => {
    const found: SpecMatch[] = [];
    let limit = DEFAULT_RESULTS;
    // The upload is removed before the answer leaves: a caller who got an answer (of any kind) can rely on
    // the anonymous upload being gone, not merely scheduled for removal.
    try {
      const query = parseOrThrow(byContentQuery, req.query, 'query parameters');
      limit = Math.min(query.maxResults ?? DEFAULT_RESULTS, MAX_RESULTS);
      if (!req.upload || req.upload.size === 0)
        throw new CairnError(
          'cairn.validation.invalid_body',
          'The request body is empty; send the asset bytes (e.g. Content-Type: image/jpeg).',
        );
      const fingerprints = (await algorithms()).filter((a) => a.kind === 'fingerprint').map((a) => a.alg);
      const watermarkAlg = isImageWatermarkAlg(query.alg) ? query.alg : undefined;
      const watermarkOnly = watermarkAlg !== undefined;
      if (query.alg !== undefined && !watermarkOnly && !fingerprints.includes(query.alg)) {
        throw new CairnError(
          'cairn.validation.invalid_body',
          `Unsupported soft binding algorithm "${query.alg}"; GET ${C2PA_RESOLUTION_PREFIX}/services/supportedAlgorithms lists the supported ones.`,
        );
      }
      const head = await uploadHead(deps.blobs, req.upload.key);
      if (!head) throw new CairnError('cairn.validation.invalid_body', 'The upload is gone; send the asset again.');
      const sniffed = sniffMediaType(head);
      if (!sniffed)
        throw new CairnError(
          'cairn.verify.unsupported_file_type',
          'The body is not an asset type this service reads (images: JPEG, PNG, WebP).',
        );
      // Without alg every algorithm runs: the watermark (an exact identification) first, then fingerprints.
      if (watermarkOnly && sniffed.modality !== 'image')
        throw new CairnError('cairn.verify.unsupported_file_type', `${query.alg} reads images (JPEG, PNG, WebP).`);
      if ((query.alg === undefined && sniffed.modality === 'image') || watermarkOnly) {
        const detected = await detectWatermark(deps, req.upload.key, watermarkAlg);
        // The detector says which algorithm read the mark; a caller who named the other one gets no match.
        if (detected && (query.alg === undefined || detected.algorithm === query.alg))
          found.push(...(await watermarkMatch(detected.payloadHex, detected.algorithm, detected.confidence)));
      }
      if (!watermarkOnly)
        found.push(...(await fingerprintMatches({ case: 'uploadBlobKey', value: req.upload.key }, limit, query.alg)));
    } finally {
      await discardUpload(deps.blobs, req);
    }
    res.set('Cache-Control', 'no-store');
    res.json({ matches: distinct(found, limit) });
  });

  // Optional in the spec. Refused for now: see docs/architecture.md ("C2PA Soft Binding Resolution API").
  router.post(`${C2PA_RESOLUTION_PREFIX}/matches/byReference`, limited, () => {
    throw new CairnError(
      'cairn.not_implemented',
      `Lookup by reference URL is not offered: this service does not fetch remote assets. Upload the asset to POST ${C2PA_RESOLUTION_PREFIX}/matches/byContent (images up to ${Math.round(deps.uploadMaxBytes / (1024 * 1024))} MB), or send its soft binding to ${C2PA_RESOLUTION_PREFIX}/matches/byBinding.`,
    );
  });

  router.get(`${C2PA_RESOLUTION_PREFIX}/manifests/:manifestId`, async (req, res) => {
    // Cairn's manifest id (m_…, as in matches) or the C2PA manifest label a client reads from the file (urn:c2pa:…);
    // anything else is a manifest this repository does not hold: 404.
    const manifestId = String(req.params.manifestId);
    const { returnActiveManifest } = parseOrThrow(manifestQuery, req.query, 'query parameters');
    // The signer cuts the store down to its active manifest: it owns the stores, the gateway only passes bytes.
    const manifest = await deps.signer.getManifest({
      ...manifestRef(manifestId),
      activeManifestOnly: returnActiveManifest,
    });
    const body = Buffer.from(manifest.manifestStore);
    // A manifest never changes once signed: cacheable anywhere, for as long as anyone likes.
    res.set({
      'Content-Type': 'application/c2pa',
      'Cache-Control': 'public, max-age=31536000, immutable',
      ETag: `"${manifestId}${returnActiveManifest ? '-active' : ''}"`,
    });
    res.send(body);
  });

  router.get(`${C2PA_RESOLUTION_PREFIX}/services/capabilities`, (_req, res) => {
    // Queries by binding and by content; no lookup by reference (Cairn fetches no remote assets), and manifests
    // and bindings are stored by signing, not through this API.
    res.set('Cache-Control', 'public, max-age=300');
    res.json({ c2paSpecificationVersion: C2PA_SPECIFICATION_VERSION, supportedCapabilities: ['queryByContent'] });
  });

  router.get(`${C2PA_RESOLUTION_PREFIX}/services/status`, async (_req, res) => {
    res.set('Cache-Control', 'no-store');
    res.json({ status: await resolutionStatus(deps), timestamp: new Date().toISOString() });
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

  router.get(`${C2PA_RESOLUTION_PREFIX}/services/supportedAlgorithms`, async (_req, res) => {
    const fingerprints = (await algorithms()).filter((a) => a.kind === 'fingerprint').map((a) => ({ alg: a.alg }));
    res.set('Cache-Control', 'public, max-age=300');
    res.json({ watermarks: IMAGE_WATERMARK_ALGS.map((alg) => ({ alg })), fingerprints });
  });

  return router;
}

/** A manifest named in a path: Cairn's manifest id, or the C2PA manifest label of its active manifest. */
export function manifestRef(param: string): { manifestId: string } | { label: string } {
  return param.startsWith('urn:') ? { label: param } : { manifestId: param };
}

/**
 * `ok` when every service behind the API answers; `down` when manifests cannot be served or nothing can be looked
 * up (signer, soft-binding service); `degraded` when only watermark resolution is out.
 */
async function resolutionStatus(deps: C2paResolutionDeps): Promise<'ok' | 'degraded' | 'down'> {
  const answers = (call: Promise<unknown>) =>
    call.then(
      () => true,
      (error: unknown) =>
        isCairnError(error) && error.code !== 'cairn.unavailable' && error.code !== 'cairn.internal_error',
    );
  const [signer, softbinding, watermark] = await Promise.all([
    answers(deps.signer.getTrustAnchors({}, { deadlineMs: 2000 })),
    answers(deps.softbinding.supportedAlgorithms({}, { deadlineMs: 2000 })),
    answers(deps.watermark.resolvePayload({ payloadHex: '00'.repeat(WATERMARK_PAYLOAD_BYTES) }, { deadlineMs: 2000 })),
  ]);
  if (!signer || !softbinding) return 'down';
  return watermark ? 'ok' : 'degraded';
}

/** The supported algorithms of the soft-binding service, asked at most once a minute. */
function supportedAlgorithmsCache(
  softbinding: ServiceClient<SoftBindingMethods>,
): () => Promise<softbindingV1.Algorithm[]> {
  let cached: { at: number; value: Promise<softbindingV1.Algorithm[]> } | undefined;
  return () => {
    if (!cached || Date.now() - cached.at > 60_000) {
      const value = softbinding.supportedAlgorithms({}, { deadlineMs: 10_000 }).then((r) => r.algorithms);
      cached = { at: Date.now(), value };
      value.catch(() => (cached = undefined));
    }
    return cached.value;
  };
}

/**
 * A binding value as bytes. The spec's form is base64 (standard or URL-safe alphabet, padding optional);
 * Cairn's own hex form (as written in its manifests' soft-binding assertions and in /v1/lookup) is accepted
 * too. The two never collide: for a value of n bytes hex has 2n characters, base64 about 4n/3.
 */
export function bindingBytes(value: string, bytes: number, alg: string): Buffer {
  if (value.length === bytes * 2 && /^[0-9a-f]+$/i.test(value)) return Buffer.from(value, 'hex');
  if (/^[A-Za-z0-9+/_-]+={0,2}$/.test(value)) {
    const normalized = value.replace(/-/g, '+').replace(/_/g, '/').replace(/=+$/, '');
    const decoded = Buffer.from(normalized, 'base64');
    if (decoded.length === bytes && decoded.toString('base64').replace(/=+$/, '') === normalized) return decoded;
  }
  throw new CairnError(
    'cairn.validation.invalid_body',
    `A ${alg} binding value is ${bytes} bytes, base64-encoded (or ${bytes * 2} hex digits).`,
  );
}

/** The manifest id of one of Cairn's own manifest URIs (…/v1/manifests/m_…), or undefined. */
function manifestIdOf(manifestUri: string): string | undefined {
  let path: string;
  try {
    path = new URL(manifestUri).pathname;
  } catch {
    return undefined;
  }
  const id = /\/v1\/manifests\/([^/]+)$/.exec(path)?.[1];
  return id && isId('manifest', id) ? id : undefined;
}

/** One entry per manifest (the first, i.e. strongest, wins), at most `limit`. */
/**
 * One match per manifest, where it first appeared (a watermark's before fingerprints'), scored with the best
 * similarity any algorithm gave it: a mark read weakly on a copy the fingerprint finds nearly identical is that
 * close, not as close as the weak read.
 */
function distinct(matches: SpecMatch[], limit: number): SpecMatch[] {
  const byManifest = new Map<string, SpecMatch>();
  for (const m of matches) {
    const kept = byManifest.get(m.manifestId);
    if (!kept) byManifest.set(m.manifestId, m);
    else if (m.similarityScore !== undefined && (kept.similarityScore ?? -1) < m.similarityScore)
      byManifest.set(m.manifestId, { ...kept, similarityScore: m.similarityScore });
  }
  return [...byManifest.values()].slice(0, limit);
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

/**
 * Reads the watermark of an uploaded image. Undefined when none is found, or when the file is not an image the
 * watermark service can decode (then the fingerprints decide), unless the caller asked for a watermark alone
 * (`only`): then an undecodable file is the spec's 415.
 */
async function detectWatermark(
  deps: Pick<C2paResolutionDeps, 'blobs' | 'watermark'>,
  key: string,
  only: ImageWatermarkAlg | undefined,
): Promise<{ payloadHex: string; confidence: number; algorithm: string } | undefined> {
  const bytes = await deps.blobs.getBuffer(key);
  if (!bytes) throw new CairnError('cairn.validation.invalid_body', 'The upload is gone; send the asset again.');
  const undecodable = () => {
    if (only) throw new CairnError('cairn.verify.unsupported_file_type', `${only} reads images (JPEG, PNG, WebP).`);
    return undefined;
  };
  // The file as received: the watermark service reads its header and decodes it under its own media limits (a
  // bomb is its cairn.media.too_large, passed on; what it cannot read is its invalid_body). The gateway decodes
  // nothing.
  let found;
  try {
    found = await deps.watermark.detectImage({ encoded: bytes }, { deadlineMs: 30_000 });
  } catch (error) {
    if (isCairnError(error) && error.code === 'cairn.validation.invalid_body') return undecodable();
    throw error;
  }
  // A mark the watermark service found on other content than it was embedded in (copied) leads nowhere.
  return found.detected && found.contentConsistent !== false
    ? { payloadHex: found.payloadHex, confidence: found.confidence, algorithm: found.algorithm }
    : undefined;
}
