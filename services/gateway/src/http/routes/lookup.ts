import { Router } from 'express';
import { z } from 'zod';
import type { BlobStore } from '@cairn/blob';
import { CairnError, parseOrThrow } from '@cairn/errors';
import type { softbindingV1 } from '@cairn/proto';
import type { ClientOf } from '@cairn/rpc';
import { reserveUnit, type BillingClient } from '../../app/metering.js';
import { requireScope } from '../auth.js';
import { fileIfMultipart, withUpload } from '../uploads.js';
import { FINGERPRINT_ALG } from '@cairn/catalog';
import { EXAMPLE, json, jsonRequest, needsKey, operationsOf } from '../openapi/describe.js';

export const bindingBody = z
  .object({ binding: z.object({ alg: z.string().min(1).max(64), value: z.string().min(1).max(512) }) })
  .strict();

export const operations = operationsOf('Verification', needsKey('read'), {
  lookup: {
    route: 'post /v1/lookup',
    summary: 'Find signed assets by file or soft-binding value',
    body: jsonRequest(bindingBody, { binding: { alg: FINGERPRINT_ALG.image, value: 'c3f0a1b2d4e5f607'.repeat(4) } }),
    answers: [json(200, 'Matches', { matches: [{ asset_id: EXAMPLE.asset, similarity: 0.97 }] })],
    errors: ['cairn.verify.no_input', 'cairn.validation.body_too_large', 'cairn.billing.quota_exceeded'],
  },
});

/**
 * `POST /v1/lookup`: the soft-binding lookup, by file (multipart `file`) or by binding value. Metered
 * `lookup` whether or not anything matches (never when it fails).
 */
export function lookupRoutes(deps: {
  blobs: BlobStore;
  softbinding: ClientOf<typeof softbindingV1.SoftBindingService>;
  billing: BillingClient;
  uploadMaxBytes: number;
}): Router {
  const router = Router();
  router.post(
    '/v1/lookup',
    requireScope('read'),
    fileIfMultipart(() => ({
      blobs: deps.blobs,
      field: 'file',
      maxBytes: deps.uploadMaxBytes,
      tooLarge: 'cairn.validation.body_too_large',
    })),
    async (req, res) => {
      await withUpload(deps.blobs, req, async () => {
        const tenant = req.auth!.tenant;
        let query: softbindingV1.LookupRequest['query'];
        if (req.upload) query = { case: 'uploadBlobKey', value: req.upload.key };
        else if (req.is('application/json'))
          query = {
            case: 'binding',
            value: {
              ...parseOrThrow(bindingBody, req.body ?? {}, 'request body').binding,
              $typeName: 'cairn.softbinding.v1.Binding',
            },
          };
        else
          throw new CairnError(
            'cairn.verify.no_input',
            'Send a file (multipart field "file") or {"binding": {"alg", "value"}}.',
          );
        const metered = await reserveUnit(deps.billing, tenant, 'lookup');
        try {
          const { matches } = await deps.softbinding.lookup(
            { tenantId: tenant.tenantId, query },
            { deadlineMs: 30_000 },
          );
          await metered.commit();
          res.json({
            matches: matches.map((m) => ({
              asset_id: m.assetId,
              manifest_uri: m.manifestUri,
              verifier_url: m.verifierUrl,
              distance: m.distance,
              similarity: m.similarity,
              alg: m.alg,
            })),
          });
        } catch (error) {
          await metered.release();
          throw error;
        }
      });
    },
  );
  return router;
}
