import { sql } from 'drizzle-orm';
import { customType, index, pgPolicy, pgSchema, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { outboxTable, processedEventsTable } from '@cairn/db';

const bytea = customType<{ data: Buffer; driverData: Buffer }>({ dataType: () => 'bytea' });

/** The watermark service's own schema; no other service reads it. */
export const watermark = pgSchema('watermark');

/**
 * The registry of embedded marks: which watermark id (and so which tenant and asset) a payload stands for.
 * A tenant sees its own rows. Detection is public (anyone may verify a file) and does not know the tenant:
 * it presents the payload it decoded in `cairn.watermark_payload`, which opens exactly that one row, for
 * reading only.
 */
export const marks = watermark.table(
  'marks',
  {
    watermarkId: text('watermark_id').primaryKey(),
    payloadHex: text('payload_hex').notNull(),
    tenantId: text('tenant_id').notNull(),
    assetId: text('asset_id').notNull(),
    algorithm: text('algorithm').notNull(),
    /** The key a keyed mark was embedded with (WATERMARK_KEYS kid); null for keyless cairn-dct-v1 marks. */
    keyId: text('key_id'),
    /**
     * cairn-sync-v2: a coarse luma map (about 64² bytes) of the image the mark was embedded in, so a detection can
     * tell the asset's content, cropped or rotated, from unrelated content carrying a copied mark
     * (domain/image/content-registration.ts). Null for other algorithms.
     */
    content: bytea('content'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('marks_payload_idx').on(t.payloadHex),
    index('marks_tenant_asset_idx').on(t.tenantId, t.assetId),
    pgPolicy('marks_isolation', {
      for: 'all',
      using: sql`${t.tenantId} = current_setting('cairn.tenant_id', true)`,
      withCheck: sql`${t.tenantId} = current_setting('cairn.tenant_id', true)`,
    }),
    pgPolicy('marks_by_payload', {
      for: 'select',
      using: sql`${t.payloadHex} = current_setting('cairn.watermark_payload', true)`,
    }),
  ],
);

/**
 * Watermark keys the service generated itself (development without WATERMARK_KEYS), sealed with AES-256-GCM
 * bound to their kid, so a restart detects the marks it made before. Not tenant data; production keys come
 * from configuration and never land here.
 */
export const generatedKeys = watermark.table('generated_keys', {
  kid: text('kid').primaryKey(),
  sealedKey: text('sealed_key').notNull(),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
});

export const outbox = outboxTable(watermark);
export const processedEvents = processedEventsTable(watermark);
