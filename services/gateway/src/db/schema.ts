import { sql } from 'drizzle-orm';
import { bigint, integer, jsonb, pgPolicy, pgSchema, primaryKey, text, timestamp, index } from 'drizzle-orm/pg-core';
import { outboxTable, processedEventsTable, tenantPolicy } from '@cairn/db';

export const gateway = pgSchema('gateway');

/**
 * One row per sign Idempotency-Key of a tenant: the request's hash and the answer given, so a replay gets
 * the same answer without a second sign and a different payload is refused.
 */
export const signRequests = gateway.table(
  'sign_requests',
  {
    tenantId: text('tenant_id').notNull(),
    idempotencyKey: text('idempotency_key').notNull(),
    requestHash: text('request_hash').notNull(),
    assetId: text('asset_id').notNull(),
    httpStatus: integer('http_status').notNull(),
    response: jsonb('response').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    /** 'in_progress' while the sign runs (no transaction open), 'done' once its answer is recorded. */
    state: text('state').notNull().default('done'),
    /** Which attempt holds the claim: only it may finish or drop the row (a takeover gives it a new one). */
    claimId: text('claim_id'),
    /** Past this an in_progress claim is abandoned (its gateway died mid-sign) and may be taken over. */
    leaseExpiresAt: timestamp('lease_expires_at', { withTimezone: true }),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.idempotencyKey] }), tenantPolicy('sign_requests_tenant', t.tenantId)],
);

/**
 * Upload sessions (POST /v1/uploads): a file above the direct upload limit goes to the blob store by a signed
 * or presigned PUT, then a sign or verify names it by upload_id, once. The tenant sees its own sessions; the
 * unauthenticated PUT opens its one row by the id in its signed URL (`cairn.upload_id`); the expiry sweep, as
 * `cairn.system = 'upload-expiry'`, sees every tenant's sessions (it deletes their files, then the rows).
 */
export const uploadSessions = gateway.table(
  'upload_sessions',
  {
    uploadId: text('upload_id').primaryKey(),
    tenantId: text('tenant_id').notNull(),
    blobKey: text('blob_key').notNull(),
    filename: text('filename'),
    declaredSize: bigint('declared_size', { mode: 'number' }).notNull(),
    contentType: text('content_type'),
    /** pending (URL handed out), uploaded (file received), used (a sign or verify took it). */
    state: text('state').notNull().default('pending'),
    size: bigint('size', { mode: 'number' }),
    sha256: text('sha256'),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index('upload_sessions_expires_idx').on(t.expiresAt),
    tenantPolicy('upload_sessions_tenant', t.tenantId),
    pgPolicy('upload_sessions_by_id', {
      for: 'all',
      using: sql`${t.uploadId} = current_setting('cairn.upload_id', true)`,
      withCheck: sql`${t.uploadId} = current_setting('cairn.upload_id', true)`,
    }),
    pgPolicy('upload_sessions_expiry_sweep', {
      for: 'all',
      using: sql`current_setting('cairn.system', true) = 'upload-expiry'`,
      withCheck: sql`current_setting('cairn.system', true) = 'upload-expiry'`,
    }),
  ],
);

export const outbox = outboxTable(gateway);
export const processedEvents = processedEventsTable(gateway);
