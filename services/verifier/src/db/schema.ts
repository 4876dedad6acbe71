import { sql } from 'drizzle-orm';
import { jsonb, pgPolicy, pgSchema, text, timestamp } from 'drizzle-orm/pg-core';
import { outboxTable, processedEventsTable } from '@cairn/db';

export const verifier = pgSchema('verifier');

/** An enterprise tenant's own trust anchors (POST /v1/trust-list): used instead of the default list. */
export const trustLists = verifier.table(
  'trust_lists',
  {
    tenantId: text('tenant_id').primaryKey(),
    entries: jsonb('entries').$type<Array<{ issuer_cn: string; certificate_pem: string }>>().notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    pgPolicy('trust_lists_tenant', {
      for: 'all',
      using: sql`${t.tenantId} = current_setting('cairn.tenant_id', true)`,
      withCheck: sql`${t.tenantId} = current_setting('cairn.tenant_id', true)`,
    }),
  ],
);

/**
 * The latest verdict about each of Cairn's manifests (GET /v1/verify/{manifest_id}). Manifests are public,
 * and only public fields are kept (no tenant, no matches), so the table is not tenant-owned.
 */
export const results = verifier.table('results', {
  manifestId: text('manifest_id').primaryKey(),
  assetId: text('asset_id').notNull(),
  result: jsonb('result').notNull(),
  verifiedAt: timestamp('verified_at', { withTimezone: true }).notNull().defaultNow(),
  expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
});

export const outbox = outboxTable(verifier);
export const processedEvents = processedEventsTable(verifier);
