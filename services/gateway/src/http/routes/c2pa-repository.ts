import express, { Router, type RequestHandler } from 'express';
import { z } from 'zod';
import { publicUrl } from '@cairn/config';
import { CairnError, parseOrThrow } from '@cairn/errors';
import type { RedisRateLimiter } from '../../adapters/rate-limit.js';
import type { TenantDirectory } from '../../adapters/tenant-directory.js';
import { ManifestRepositoryApi } from '../../app/c2pa-repository.js';
import { C2PA_RESOLUTION_PREFIX, type SoftBindingClient } from '../../app/c2pa-resolution.js';
import { authenticate, requireScope } from '../auth.js';
import { tenantRateLimit } from '../limits.js';
import { C2PA_RESOLUTION_TAG } from './c2pa-resolution.js';
import { empty, json, jsonRequest, needsKey, NOT_FOUND, operationsOf, PUBLIC } from '../openapi/describe.js';

export interface C2paRepositoryDeps {
  tenants: TenantDirectory;
  limiter: RedisRateLimiter;
  softbinding: SoftBindingClient;
  publicBaseUrl: string;
  /** Largest manifest store accepted (the soft-binding service's STORED_MANIFEST_MAX_BYTES should match). */
  manifestMaxBytes: number;
}

export const storeManifestQuery = z.object({
  returnReceipt: z
    .enum(['true', 'false', '1', '0'], { message: 'returnReceipt must be true or false' })
    .optional()
    .transform((v) => v === 'true' || v === '1'),
});
/**
 * The spec's binding body. `alg` is Cairn's addition (optional): a value bound without one is found by a query
 * naming any algorithm; with one, only by queries naming that algorithm.
 */
export const bindingBody = z.object({
  bindingValue: z.string().trim().min(1, 'bindingValue must not be empty').max(4096),
  manifestId: z.string().min(1).max(256),
  alg: z.string().trim().min(1).max(128).optional(),
});
const receiptBody = z.record(z.string(), z.unknown());
export { receiptBody as verifyReceiptBody };

const STORED = 'sm_01JBZ3Q8M6V4W2X9Y7T5R3N1PK';

export const operations = operationsOf(C2PA_RESOLUTION_TAG, needsKey('sign'), {
  c2paStoreManifest: {
    route: `post ${C2PA_RESOLUTION_PREFIX}/manifests`,
    summary: 'Store a C2PA manifest store in the repository',
    description:
      "The body is the manifest store (JUMBF, Content-Type: application/c2pa), at most STORED_MANIFEST_MAX_BYTES. Its structure is checked (a c2pa superbox of manifests with claims and signatures); its signature is not Cairn's and is not checked. The values of its c2pa.soft-binding assertions are bound to it. Answers the stored manifest id (sm_…) and, with returnReceipt=true, the repository receipt Cairn signed. Stored manifests are never consulted by verify.",
    query: storeManifestQuery,
    answers: [
      json(200, 'Stored', {
        manifestId: STORED,
        receipt: { '@type': 'org.c2pa.manifest-receipt', repository: { manifestId: STORED } },
      }),
    ],
    errors: [
      'cairn.validation.body_too_large',
      'cairn.validation.unsupported_media_type',
      'cairn.resolution.quota_exceeded',
    ],
  },
  c2paDeleteManifest: {
    route: `delete ${C2PA_RESOLUTION_PREFIX}/manifests/:manifestId`,
    summary: 'Delete a stored manifest with its bindings and receipt (owner only)',
    answers: [empty('Deleted')],
    errors: NOT_FOUND,
  },
  c2paCreateBinding: {
    route: `post ${C2PA_RESOLUTION_PREFIX}/bindings`,
    summary: 'Bind a soft-binding value to one of your stored manifests',
    description:
      "alg is optional (Cairn's addition to the spec's body): a value bound without one is found by a byBinding query naming any algorithm. A value you already bound to another manifest is 409; PUT moves it.",
    body: jsonRequest(bindingBody, { bindingValue: 'AAECAwQFBgc=', manifestId: STORED }),
    answers: [empty('Bound')],
    errors: ['cairn.not_found', 'cairn.resolution.binding_exists'],
  },
  c2paUpdateBinding: {
    route: `put ${C2PA_RESOLUTION_PREFIX}/bindings`,
    summary: 'Move one of your bindings to another of your stored manifests',
    body: jsonRequest(bindingBody, { bindingValue: 'AAECAwQFBgc=', manifestId: STORED }),
    answers: [empty('Moved')],
    errors: NOT_FOUND,
  },
  c2paGetReceipt: {
    route: `get ${C2PA_RESOLUTION_PREFIX}/manifests/:manifestId/receipts`,
    summary: "A stored manifest's repository receipt, verified now",
    auth: PUBLIC,
    answers: [
      json(200, 'The receipt with verified', {
        '@type': 'org.c2pa.manifest-receipt',
        repository: { uri: 'https://cairn.example/c2pa/v1', manifestId: STORED },
        verified: true,
      }),
    ],
    errors: NOT_FOUND,
  },
  c2paVerifyReceipt: {
    route: `post ${C2PA_RESOLUTION_PREFIX}/manifests/:manifestId/receipts`,
    summary: 'Verify a receipt against a stored manifest',
    auth: PUBLIC,
    body: jsonRequest(receiptBody, {
      '@type': 'org.c2pa.manifest-receipt',
      repository: { manifestId: STORED },
    }),
    answers: [json(200, 'The receipt with verified (and error when false)', { verified: true })],
    errors: ['cairn.not_found', 'cairn.validation.unsupported_media_type'],
  },
});

/**
 * The store side of the Soft Binding Resolution API (capabilities storeManifests and storeBindings): a tenant keeps
 * C2PA manifest stores it made elsewhere in Cairn's repository, binds soft-binding values to them, and gets
 * receipts Cairn signs. Writes need a key of scope `sign` (or `admin`); receipts are public like manifests.
 */
export function c2paRepositoryRoutes(deps: C2paRepositoryDeps): Router {
  const router = Router();
  const base = publicUrl(deps.publicBaseUrl, C2PA_RESOLUTION_PREFIX);
  const repository = new ManifestRepositoryApi(deps.softbinding, base);
  // The key is checked before the body is read: an unauthenticated upload is refused without storing a byte.
  const keyed = [authenticate(deps.tenants), tenantRateLimit(deps.limiter), requireScope('sign')];
  const manifestBody = express.raw({ type: () => true, limit: deps.manifestMaxBytes });

  // The type is checked before the body is read: a body of another type is refused unread.
  const manifestType: RequestHandler = (req, _res, next) => {
    if (req.is('application/c2pa') || req.is('application/octet-stream')) return next();
    req.resume();
    next(
      new CairnError(
        'cairn.validation.unsupported_media_type',
        'Send the C2PA manifest store itself as the body, with Content-Type: application/c2pa.',
      ),
    );
  };

  router.post(`${C2PA_RESOLUTION_PREFIX}/manifests`, ...keyed, manifestType, manifestBody, async (req, res) => {
    const { returnReceipt } = parseOrThrow(storeManifestQuery, req.query, 'query parameters');
    if (!Buffer.isBuffer(req.body) || req.body.length === 0)
      throw new CairnError('cairn.validation.invalid_body', 'The body is empty; send the manifest store (JUMBF).');
    const stored = await repository.store(req.auth!.tenant.tenantId, req.body);
    res.set('Cache-Control', 'no-store');
    res.json({ manifestId: stored.manifestId, ...(returnReceipt ? { receipt: stored.receipt } : {}) });
  });

  router.delete(`${C2PA_RESOLUTION_PREFIX}/manifests/:manifestId`, ...keyed, async (req, res) => {
    await repository.delete(req.auth!.tenant.tenantId, String(req.params.manifestId));
    res.status(204).end();
  });

  for (const [method, replace] of [
    ['post', false],
    ['put', true],
  ] as const) {
    router[method](`${C2PA_RESOLUTION_PREFIX}/bindings`, ...keyed, async (req, res) => {
      const body = parseOrThrow(bindingBody, req.body ?? {}, 'request body');
      await repository.bind(req.auth!.tenant.tenantId, body, replace);
      res.status(204).end();
    });
  }

  router.get(`${C2PA_RESOLUTION_PREFIX}/manifests/:manifestId/receipts`, async (req, res) => {
    res.set('Cache-Control', 'no-store');
    res.json(await repository.receipt(String(req.params.manifestId)));
  });

  router.post(`${C2PA_RESOLUTION_PREFIX}/manifests/:manifestId/receipts`, async (req, res) => {
    if (!req.is('application/json'))
      throw new CairnError('cairn.validation.unsupported_media_type', 'Send the receipt as application/json.');
    const receipt = parseOrThrow(receiptBody, req.body ?? {}, 'request body');
    res.set('Cache-Control', 'no-store');
    res.json(await repository.verifyReceipt(String(req.params.manifestId), receipt));
  });

  return router;
}
