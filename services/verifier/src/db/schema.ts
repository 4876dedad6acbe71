import { boolean, integer, jsonb, pgSchema, text, timestamp } from 'drizzle-orm/pg-core';
import { outboxTable, processedEventsTable, tenantPolicy } from '@cairn/db';

export const verifier = pgSchema('verifier');

/** An enterprise tenant's own trust anchors (POST /v1/trust-list): used instead of the default list. */
export const trustLists = verifier.table(
  'trust_lists',
  {
    tenantId: text('tenant_id').primaryKey(),
    entries: jsonb('entries').$type<Array<{ issuer_cn: string; certificate_pem: string }>>().notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [tenantPolicy('trust_lists_tenant', t.tenantId)],
);

/**
 * The verdict about each of Cairn's manifests as Cairn signed and keeps it (GET /v1/verify/{manifest_id}, /v/):
 * computed from Cairn's own stored file with the default trust list, never from somebody's upload. Manifests
 * are public and only public fields are kept (no tenant, no matches), so the table is not tenant-owned.
 * A row is recomputed when it is `stale` (a signing certificate was revoked; an anchor batch it was waiting for
 * was confirmed), when the default trust list's digest changed, or when it is older than the freshness window.
 */
export const results = verifier.table('results', {
  manifestId: text('manifest_id').primaryKey(),
  assetId: text('asset_id').notNull(),
  result: jsonb('result').notNull(),
  verifiedAt: timestamp('verified_at', { withTimezone: true }).notNull().defaultNow(),
  expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
  /** SHA-256 of the default trust list the verdict was computed with. */
  trustDigest: text('trust_digest').notNull().default(''),
  /** False while the asset's anchor batch is not confirmed: its confirmation changes the verdict. */
  anchorSettled: boolean('anchor_settled').notNull().default(true),
  stale: boolean('stale').notNull().default(false),
  /** The crJSON validation report of the reading the verdict came from (null for verdicts kept before reports). */
  report: jsonb('report'),
});

/** Asynchronous verifies (large files, `Prefer: respond-async`): the row is the source of truth for a job's state. */
export const verifyJobs = verifier.table(
  'verify_jobs',
  {
    jobId: text('job_id').primaryKey(),
    tenantId: text('tenant_id').notNull(),
    status: text('status').$type<'queued' | 'running' | 'done' | 'failed'>().notNull(),
    uploadBlobKey: text('upload_blob_key').notNull(),
    reservationId: text('reservation_id').notNull().default(''),
    result: jsonb('result'),
    problem: jsonb('problem'),
    attempts: integer('attempts').notNull().default(0),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [tenantPolicy('verify_jobs_tenant', t.tenantId)],
);

export const outbox = outboxTable(verifier);
export const processedEvents = processedEventsTable(verifier);
