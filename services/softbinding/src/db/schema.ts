import { sql } from 'drizzle-orm';
import { bigserial, bit, index, integer, pgPolicy, pgSchema, text, timestamp, uniqueIndex, type PgColumn } from 'drizzle-orm/pg-core';
import { outboxTable, processedEventsTable } from '@cairn/db';

/** The softbinding service's own schema; no other service reads it. */
export const softbinding = pgSchema('softbinding');

/** Chunks of the multi-index hash: 16 × 16 bits of the 256-bit hash, each exact-matched through its own index. */
export const CHUNKS = 16;

const chunkColumns = {
  c0: integer('c0').notNull(),
  c1: integer('c1').notNull(),
  c2: integer('c2').notNull(),
  c3: integer('c3').notNull(),
  c4: integer('c4').notNull(),
  c5: integer('c5').notNull(),
  c6: integer('c6').notNull(),
  c7: integer('c7').notNull(),
  c8: integer('c8').notNull(),
  c9: integer('c9').notNull(),
  c10: integer('c10').notNull(),
  c11: integer('c11').notNull(),
  c12: integer('c12').notNull(),
  c13: integer('c13').notNull(),
  c14: integer('c14').notNull(),
  c15: integer('c15').notNull(),
};

/**
 * Perceptual hashes of signed assets (several per asset: the whole image and crops of it, `variant`).
 * A tenant sees its own rows. Public lookup (unauthenticated verify) sets `cairn.softbinding_public`, which opens
 * every row for reading; the code then returns only the public fields of a match (index.ts `publicMatch`).
 */
export const fingerprints = softbinding.table(
  'fingerprints',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    tenantId: text('tenant_id').notNull(),
    assetId: text('asset_id').notNull(),
    manifestId: text('manifest_id').notNull(),
    manifestUri: text('manifest_uri').notNull(),
    verifierUrl: text('verifier_url').notNull(),
    alg: text('alg').notNull(),
    variant: text('variant').notNull(),
    hash: bit('hash', { dimensions: 256 }).notNull(),
    quality: integer('quality').notNull(),
    ...chunkColumns,
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    uniqueIndex('fingerprints_asset_variant_idx').on(t.tenantId, t.assetId, t.alg, t.variant),
    ...(Object.keys(chunkColumns) as Array<keyof typeof chunkColumns>).map((c) => index(`fingerprints_${c}_idx`).on(t[c] as PgColumn)),
    pgPolicy('fingerprints_isolation', {
      for: 'all',
      using: sql`${t.tenantId} = current_setting('cairn.tenant_id', true)`,
      withCheck: sql`${t.tenantId} = current_setting('cairn.tenant_id', true)`,
    }),
    pgPolicy('fingerprints_public_lookup', {
      for: 'select',
      using: sql`current_setting('cairn.softbinding_public', true) = 'on'`,
    }),
  ],
);

export const outbox = outboxTable(softbinding);
export const processedEvents = processedEventsTable(softbinding);
