import { sql } from 'drizzle-orm';
import { bigint, index, integer, jsonb, pgPolicy, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { signer } from './namespace.js';

const currentTenant = sql`current_setting('cairn.tenant_id', true)`;

/**
 * Signed assets, one row per sign. A tenant sees its own; the public verifier page may open exactly one row
 * by presenting its asset id (`cairn.asset_id`), the verifier the rows of one signed file's SHA-256
 * (`cairn.content_sha256`), and the retention sweep may see rows past their expiry
 * (`cairn.system = 'asset-expiry'`) and nothing else.
 */
export const assets = signer.table(
  'assets',
  {
    assetId: text('asset_id').primaryKey(),
    tenantId: text('tenant_id').notNull(),
    recipeId: text('recipe_id').notNull(),
    mediaType: text('media_type').notNull(),
    sizeBytes: bigint('size_bytes', { mode: 'number' }).notNull(),
    contentSha256: text('content_sha256').notNull(),
    uploadSha256: text('upload_sha256').notNull(),
    watermarkId: text('watermark_id'),
    watermarkPayload: text('watermark_payload'),
    manifestId: text('manifest_id').notNull(),
    blobKey: text('blob_key'),
    metadata: jsonb('metadata').$type<Record<string, string>>().notNull(),
    signerName: text('signer_name').notNull(),
    certificateSerial: text('certificate_serial').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    deletedAt: timestamp('deleted_at', { withTimezone: true }),
  },
  (t) => [
    index('assets_tenant_created_idx').on(t.tenantId, t.createdAt),
    index('assets_expiry_idx')
      .on(t.expiresAt)
      .where(sql`${t.deletedAt} is null`),
    index('assets_content_idx').on(t.contentSha256),
    pgPolicy('assets_tenant', {
      for: 'all',
      using: sql`${t.tenantId} = ${currentTenant}`,
      withCheck: sql`${t.tenantId} = ${currentTenant}`,
    }),
    pgPolicy('assets_by_id', { for: 'select', using: sql`${t.assetId} = current_setting('cairn.asset_id', true)` }),
    // The verifier may find the asset whose signed file is exactly these bytes (a sidecar-signed upload).
    pgPolicy('assets_by_content', {
      for: 'select',
      using: sql`${t.contentSha256} = current_setting('cairn.content_sha256', true)`,
    }),
    pgPolicy('assets_expiry_sweep', {
      for: 'all',
      using: sql`current_setting('cairn.system', true) = 'asset-expiry' and ${t.expiresAt} < now()`,
      withCheck: sql`current_setting('cairn.system', true) = 'asset-expiry'`,
    }),
  ],
);

/** Manifest stores are public by design (served at manifest_uri without auth): one row opens by its id. */
export const manifests = signer.table(
  'manifests',
  {
    manifestId: text('manifest_id').primaryKey(),
    assetId: text('asset_id').notNull(),
    tenantId: text('tenant_id').notNull(),
    blobKey: text('blob_key').notNull(),
    label: text('label').notNull(),
    sizeBytes: integer('size_bytes').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    pgPolicy('manifests_tenant', {
      for: 'all',
      using: sql`${t.tenantId} = ${currentTenant}`,
      withCheck: sql`${t.tenantId} = ${currentTenant}`,
    }),
    pgPolicy('manifests_by_id', {
      for: 'select',
      using: sql`${t.manifestId} = current_setting('cairn.manifest_id', true)`,
    }),
    // The C2PA manifest label (urn:c2pa:…) names the same public manifest (Soft Binding Resolution API 2.4).
    pgPolicy('manifests_by_label', {
      for: 'select',
      using: sql`${t.label} = current_setting('cairn.manifest_label', true)`,
    }),
    index('manifests_label_idx').on(t.label),
  ],
);

/** A running job's progress as its row keeps it. */
export interface StoredJobProgress {
  stage: string;
  fraction: number;
  /** ISO 8601. */
  updatedAt: string;
}

/** Asynchronous signs (large uploads). */
export const jobs = signer.table(
  'jobs',
  {
    jobId: text('job_id').primaryKey(),
    tenantId: text('tenant_id').notNull(),
    status: text('status').$type<'queued' | 'running' | 'done' | 'failed'>().notNull(),
    request: jsonb('request').notNull(),
    result: jsonb('result'),
    problem: jsonb('problem'),
    attempts: integer('attempts').notNull().default(0),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
    /** How far the running attempt is (app/job-progress.ts); null until it reports, cleared when an attempt starts. */
    progress: jsonb('progress').$type<StoredJobProgress>(),
  },
  (t) => [
    index('jobs_tenant_created_idx').on(t.tenantId, t.createdAt),
    // One job per asset id: EnqueueSign retried with the same id (its caller died after the first) finds this one.
    uniqueIndex('jobs_asset_idx').on(sql`(${t.request}->>'assetId')`),
    pgPolicy('jobs_tenant', {
      for: 'all',
      using: sql`${t.tenantId} = ${currentTenant}`,
      withCheck: sql`${t.tenantId} = ${currentTenant}`,
    }),
  ],
);

/**
 * A sign in progress for a caller-chosen asset id: one row from the sign's start until its record commits (the row
 * is deleted in that transaction) or it fails. It makes Sign idempotent by asset id when a caller retries while the
 * first attempt still runs (the gateway, killed mid-sign, restarted and retried by its client): the second attempt
 * is told to retry later instead of writing the same asset's file concurrently. A signer killed mid-sign leaves its
 * row until the lease lapses. The tenant sees its own; a claim of another tenant's id is seen by presenting it
 * (`cairn.asset_id`), so the refusal can say so.
 */
export const signClaims = signer.table(
  'sign_claims',
  {
    assetId: text('asset_id').primaryKey(),
    tenantId: text('tenant_id').notNull(),
    claimId: text('claim_id').notNull(),
    leaseExpiresAt: timestamp('lease_expires_at', { withTimezone: true }).notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    pgPolicy('sign_claims_tenant', {
      for: 'all',
      using: sql`${t.tenantId} = ${currentTenant}`,
      withCheck: sql`${t.tenantId} = ${currentTenant}`,
    }),
    pgPolicy('sign_claims_by_id', {
      for: 'select',
      using: sql`${t.assetId} = current_setting('cairn.asset_id', true)`,
    }),
  ],
);
