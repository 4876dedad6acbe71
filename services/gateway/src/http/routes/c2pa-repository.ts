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
