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
import { empty, json, jsonRequest, needsKey, operationsOf, PUBLIC } from '../openapi/describe.js';

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

export const operations = operationsOf('Signing', {
  createUploadSession: {
    route: 'post /v1/uploads',
    summary: 'Open an upload session for a large file (above the direct upload limit)',
    auth: needsKey('sign'),
    body: jsonRequest(createUploadBody, { filename: 'launch.mp4', size: 734003200, content_type: 'video/mp4' }),
    answers: [
      json(201, 'Where to PUT the file; then send upload_id to POST /v1/sign or /v1/verify instead of the file', {
        upload_id: 'up_01JBZ3Q8M6V4W2X9Y7T5R3N1PK',
        upload_url:
          'https://cairn.example.com/v1/uploads/up_01JBZ3Q8M6V4W2X9Y7T5R3N1PK/content?expires=1795312345&signature=…',
        method: 'PUT',
        expires_at: '2026-11-23T23:00:00.000Z',
        max_bytes: 734003200,
      }),
    ],
    errors: ['cairn.upload.too_large'],
  },
  putUploadContent: {
    route: 'put /v1/uploads/:upload_id/content',
    summary: "The file of an upload session, to its signed URL (no API key: the URL's signature is the credential)",
    auth: PUBLIC,
    query: uploadContentQuery,
    answers: [empty('Received')],
    errors: [
      'cairn.upload.invalid_url',
      'cairn.upload.too_large',
      'cairn.upload.already_uploaded',
      'cairn.verify.unsupported_file_type',
    ],
  },
});

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
