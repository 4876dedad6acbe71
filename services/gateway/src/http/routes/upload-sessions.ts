import express, { Router } from 'express';
import { z } from 'zod';
import { CairnError } from '@cairn/errors';
import type { RedisRateLimiter } from '../../adapters/rate-limit.js';
import { scopeAllows } from '@cairn/catalog';
import type { TenantDirectory } from '../../adapters/tenant-directory.js';
import type { UploadSessions } from '../../app/upload-sessions.js';
import { authenticate } from '../auth.js';
import { tenantRateLimit } from '../limits.js';
import { jsonBody } from '../validate.js';

export interface UploadSessionRouteDeps {
  sessions: UploadSessions;
  tenants: TenantDirectory;
  limiter: RedisRateLimiter;
}

/** POST /v1/uploads: a file to come, by its declared size (the PUT is held to it). */
export const createUploadBody = z
  .object({
    filename: z.string().trim().min(1).max(255).optional(),
    size: z.number().int().positive(),
    content_type: z
      .string()
      .trim()
      .min(1)
      .max(255)
      .regex(/^[\w.+-]+\/[\w.+-]+$/, 'content_type must be a media type such as video/mp4')
      .optional(),
  })
  .strict();

/** The signed URL's query: both parts or it is refused as an invalid URL. */
export const uploadContentQuery = z.object({ expires: z.string().max(20), signature: z.string().max(100) });

/**
 * Upload sessions. Mounted before the app's JSON parser: the PUT's body is the file, whatever Content-Type the
 * client gives it, and streams into the blob store untouched.
 */
export function uploadSessionRoutes(deps: UploadSessionRouteDeps): Router {
  const router = Router();

  router.post(
    '/v1/uploads',
    express.json({ limit: '16kb', strict: true }),
    authenticate(deps.tenants),
    tenantRateLimit(deps.limiter),
    async (req, res) => {
      const auth = req.auth!;
      // An upload is only ever signed or verified, so a key that may do either may upload.
      if (!scopeAllows(auth.scope, 'sign') && !scopeAllows(auth.scope, 'verify')) {
        throw new CairnError(
          'cairn.auth.forbidden',
          `This key's scope "${auth.scope}" does not allow uploads; it needs "sign" or "verify".`,
        );
      }
      const body = jsonBody(req, createUploadBody);
      res.status(201).json(await deps.sessions.create(auth.tenant, body));
    },
  );

  router.put('/v1/uploads/:upload_id/content', async (req, res) => {
    const query = uploadContentQuery.safeParse(req.query);
    if (!query.success)
      throw new CairnError(
        'cairn.upload.invalid_url',
        'This upload URL is not valid (its expires and signature are missing).',
      );
    const declared = req.header('content-length');
    try {
      await deps.sessions.receive(
        String(req.params.upload_id),
        query.data,
        req,
        declared !== undefined && /^\d+$/.test(declared) ? Number(declared) : undefined,
      );
    } catch (error) {
      // Refused before or while the body streamed: the rest is not read, and the connection is not reused for it.
      if (!req.readableEnded) {
        res.set('Connection', 'close');
        req.resume();
      }
      throw error;
    }
    res.status(204).end();
  });

  return router;
}
