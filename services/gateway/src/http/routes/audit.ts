import { Router, type RequestHandler, type Response } from 'express';
import { z } from 'zod';
import { isoTimestamp, toOptionalTimestamp, type auditV1 } from '@cairn/proto';
import type { ClientOf } from '@cairn/rpc';
import { CairnError } from '@cairn/errors';
import { requireScope } from '../auth.js';
import { jsonBody, queryParams } from '../validate.js';
import { bytes, json, jsonRequest, needsKey, noContent, operationsOf } from '../openapi/describe.js';

export type AuditClient = ClientOf<typeof auditV1.AuditService>;

const MAX_PAGE = 1000;
const isoInstant = z.string().datetime({ offset: true });
export const auditQuery = z
  .object({
    event_type: z.string().trim().min(1).max(100).optional(),
    since: isoInstant.optional(),
    until: isoInstant.optional(),
    limit: z.coerce.number().int().min(1).max(MAX_PAGE).optional(),
    cursor: z.string().max(200).optional(),
    format: z.enum(['json', 'ndjson']).default('json'),
  })
  .strict();

const relativePath = z
  .string()
  .trim()
  .max(512)
  .regex(/^[A-Za-z0-9._=/-]*$/, 'letters, digits and . _ = - / only')
  .refine((p) => !p.split('/').includes('..'), 'must not contain ".."');
export const exportBody = z
  .object({
    sink: z.enum(['s3', 'filesystem']),
    bucket: z.string().trim().min(3).max(63).optional(),
    prefix: relativePath.optional(),
    region: z.string().trim().min(1).max(32).optional(),
    endpoint: z.string().url().max(512).optional(),
    role_arn: z.string().trim().max(2048).optional(),
    path: relativePath.optional(),
  })
  .strict()
  .refine((b) => b.sink !== 's3' || b.bucket !== undefined, {
    message: 'bucket is required for the s3 sink',
    path: ['bucket'],
  })
  .refine((b) => b.sink !== 'filesystem' || (b.bucket ?? b.region ?? b.endpoint ?? b.role_arn) === undefined, {
    message: 'bucket, region, endpoint and role_arn are for the s3 sink',
    path: ['sink'],
  })
  .refine((b) => b.sink !== 's3' || b.path === undefined, {
    message: 'path is for the filesystem sink',
    path: ['path'],
  });

function presentExport(config: auditV1.ExportConfig): Record<string, unknown> {
  const optional = (value: string) => value || null;
  return {
    sink: config.sink,
    bucket: optional(config.bucket),
    prefix: optional(config.prefix),
    region: optional(config.region),
    endpoint: optional(config.endpoint),
    role_arn: optional(config.roleArn),
    path: optional(config.path),
    exported_until: isoTimestamp(config.exportedUntil),
    last_error: optional(config.lastError),
    created_at: isoTimestamp(config.createdAt),
    updated_at: isoTimestamp(config.updatedAt),
  };
}

function presentEntry(entry: auditV1.AuditEntry): Record<string, unknown> {
  return {
    entry_id: entry.entryId,
    event_id: entry.eventId,
    event_type: entry.eventType,
    created_at: isoTimestamp(entry.createdAt),
    recorded_at: isoTimestamp(entry.recordedAt),
    data: JSON.parse(entry.dataJson) as unknown,
    seq: Number(entry.seq),
    prev_hash: entry.prevHash,
    hash: entry.hash,
  };
}

const exportConfig = json(200, 'The export config', { sink: 's3', bucket: 'example-audit' });

export const operations = operationsOf('Account', needsKey('admin'), {
  listAuditEntries: {
    route: 'get /v1/audit',
    summary: 'Read your audit log (JSON pages or NDJSON)',
    auth: needsKey('read'),
    query: auditQuery,
    answers: [
      json(200, 'A page, newest first', {
        entries: [{ entry_id: 'ae_1', event_type: 'asset.signed', seq: 42, hash: '9f…' }],
        next_cursor: null,
      }),
      bytes('format=ndjson: one entry a line', 'application/x-ndjson'),
    ],
    errors: ['cairn.validation.query_too_long'],
  },
  verifyAuditChain: {
    route: 'get /v1/audit/verify',
    summary: 'Check the audit log hash chain',
    auth: needsKey('read'),
    answers: [json(200, 'The chain check', { intact: true, entries: 42 })],
  },
  setAuditExport: {
    route: 'put /v1/audit/export',
    summary: 'Set continuous audit export (Enterprise)',
    body: jsonRequest(exportBody, { sink: 's3', bucket: 'example-audit', prefix: 'cairn/', region: 'eu-west-1' }),
    answers: [exportConfig],
    errors: ['cairn.auth.forbidden'],
  },
  getAuditExport: {
    route: 'get /v1/audit/export',
    summary: 'Read the audit export config and progress',
    answers: [exportConfig],
    errors: ['cairn.auth.forbidden', 'cairn.not_found'],
  },
  deleteAuditExport: {
    route: 'delete /v1/audit/export',
    summary: 'Stop the audit export',
    answers: [noContent],
    errors: ['cairn.auth.forbidden', 'cairn.not_found'],
  },
});

/**
 * GET /v1/audit (newest first; json pages with next_cursor, or ndjson streamed: with a limit, that many lines;
 * without one, every entry in range) and GET /v1/audit/verify (hash-chain check). Always the caller's own
 * tenant: a parent does not read its sub-tenants' logs, nor they its.
 */
export function auditRoutes(deps: { audit: AuditClient }): Router {
  const router = Router();
  router.get('/v1/audit', requireScope('read'), listEntries(deps.audit));
  router.get('/v1/audit/verify', requireScope('read'), verifyChain(deps.audit));
  // Continuous export (Enterprise): PUT sets the destination, GET shows it and how far it has been written, DELETE stops it.
  router.use('/v1/audit/export', requireScope('admin'), requireEnterprise);
  router.put('/v1/audit/export', setExport(deps.audit));
  router.get('/v1/audit/export', serveExport(deps.audit));
  router.delete('/v1/audit/export', deleteExport(deps.audit));
  return router;
}

type EntryPage = (cursor: string, limit: number) => Promise<auditV1.ListEntriesResponse>;

/** GET /v1/audit: one json page, or ndjson. */
function listEntries(audit: AuditClient): RequestHandler {
  return async (req, res) => {
    const q = queryParams(req, auditQuery);
    const tenantId = req.auth!.tenant.tenantId;
    const page: EntryPage = (cursor, limit) =>
      audit.listEntries({
        tenantId,
        eventType: q.event_type ?? '',
        since: toOptionalTimestamp(q.since),
        until: toOptionalTimestamp(q.until),
        limit,
        cursor,
      });
    res.set('Cache-Control', 'private, no-store');
    if (q.format === 'json') {
      const result = await page(q.cursor ?? '', q.limit ?? 100);
      res.json({ entries: result.entries.map(presentEntry), next_cursor: result.nextCursor || null });
      return;
    }
    await streamEntries(res, page, q.cursor ?? '', q.limit ?? Number.POSITIVE_INFINITY);
  };
}

/** ndjson: `limit` entries from `cursor` on (or every one), page after page while the client listens. */
async function streamEntries(res: Response, page: EntryPage, cursor: string, limit: number): Promise<void> {
  // The first page is fetched before the status line, so a bad cursor is still a problem+json answer.
  let remaining = limit;
  let result = await page(cursor, Math.min(remaining, MAX_PAGE));
  res.status(200).set('Content-Type', 'application/x-ndjson; charset=utf-8');
  for (;;) {
    for (const entry of result.entries) res.write(`${JSON.stringify(presentEntry(entry))}\n`);
    remaining -= result.entries.length;
    if (!result.nextCursor || remaining <= 0 || res.destroyed) break;
    result = await page(result.nextCursor, Math.min(remaining, MAX_PAGE));
  }
  res.end();
}

/** GET /v1/audit/verify: the hash chain checked by the audit service. */
function verifyChain(audit: AuditClient): RequestHandler {
  return async (req, res) => {
    const verdict = await audit.verifyChain({ tenantId: req.auth!.tenant.tenantId });
    res.set('Cache-Control', 'private, no-store');
    res.json({
      intact: verdict.intact,
      entries_checked: Number(verdict.entriesChecked),
      ...(verdict.checkpointSeq > 0n ? { checkpoint_seq: Number(verdict.checkpointSeq) } : {}),
      ...(verdict.intact
        ? { head_hash: verdict.headHash }
        : {
            first_broken: {
              entry_id: verdict.firstBrokenEntryId,
              seq: Number(verdict.firstBrokenSeq),
              reason: verdict.reason,
            },
          }),
    });
  };
}

const requireEnterprise: RequestHandler = (req, _res, next) => {
  if (req.auth!.tenant.plan !== 'enterprise')
    throw new CairnError('cairn.auth.forbidden', 'Continuous audit export is an Enterprise feature.');
  next();
};

function setExport(audit: AuditClient): RequestHandler {
  return async (req, res) => {
    const body = jsonBody(req, exportBody);
    const { config } = await audit.setExportConfig({
      config: {
        tenantId: req.auth!.tenant.tenantId,
        sink: body.sink,
        bucket: body.bucket ?? '',
        prefix: body.prefix ?? '',
        region: body.region ?? '',
        endpoint: body.endpoint ?? '',
        roleArn: body.role_arn ?? '',
        path: body.path ?? '',
      },
      // The audit service records the change, with this key as its actor, in the tenant's chain.
      actorKeyId: req.auth!.keyId,
    });
    res.set('Cache-Control', 'private, no-store');
    res.json(presentExport(config!));
  };
}

function serveExport(audit: AuditClient): RequestHandler {
  return async (req, res) => {
    const { config } = await audit.getExportConfig({ tenantId: req.auth!.tenant.tenantId });
    if (!config) throw new CairnError('cairn.not_found', 'No audit export is configured.');
    res.set('Cache-Control', 'private, no-store');
    res.json(presentExport(config));
  };
}

function deleteExport(audit: AuditClient): RequestHandler {
  return async (req, res) => {
    const { deleted } = await audit.deleteExportConfig({
      tenantId: req.auth!.tenant.tenantId,
      actorKeyId: req.auth!.keyId,
    });
    if (!deleted) throw new CairnError('cairn.not_found', 'No audit export is configured.');
    res.status(204).end();
  };
}
