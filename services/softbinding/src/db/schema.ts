import { sql } from 'drizzle-orm';
import {
  customType,
  bigint,
  bigserial,
  bit,
  index,
  integer,
  pgPolicy,
  pgSchema,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
  type PgColumn,
} from 'drizzle-orm/pg-core';
import { outboxTable, processedEventsTable, tenantPolicy } from '@cairn/db';

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
 * The policies every table of this schema carries: a tenant reads and writes its own rows; public lookup
 * (unauthenticated verify) sets `cairn.softbinding_public`, which opens every row for reading, and the code then
 * returns only the public fields of a match (fingerprints.ts `publicMatch`).
 */
function tenantPolicies(name: string, tenantId: PgColumn) {
  return [
    tenantPolicy(`${name}_isolation`, tenantId),
    pgPolicy(`${name}_public_lookup`, {
      for: 'select',
      using: sql`current_setting('cairn.softbinding_public', true) = 'on'`,
    }),
  ];
}

/**
 * Perceptual hashes of signed assets (several per asset: the whole image and crops of it, or a video's frames,
 * `variant`), tenant-scoped with the public read mode of `tenantPolicies`.
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
    /**
     * The inserting transaction's id (xid8 as a number), for catching up in commit order: ids are taken in one
     * order and committed in another, so a replica reads what committed since its last read's snapshot horizon
     * (store/fingerprints.ts). Null on rows written before migration 0005 (all committed long before any read).
     */
    xid: bigint('xid', { mode: 'number' }).default(sql`(pg_current_xact_id()::text)::bigint`),
  },
  (t) => [
    uniqueIndex('fingerprints_asset_variant_idx').on(t.tenantId, t.assetId, t.alg, t.variant),
    index('fingerprints_xid_idx').on(t.xid),
    // The content check reads one asset's rows without knowing its tenant.
    index('fingerprints_asset_alg_idx').on(t.assetId, t.alg),
    ...(Object.keys(chunkColumns) as Array<keyof typeof chunkColumns>).map((c) =>
      index(`fingerprints_${c}_idx`).on(t[c] as PgColumn),
    ),
    ...tenantPolicies('fingerprints', t.tenantId),
  ],
);

/**
 * One row per asset and algorithm for the fingerprints that are not single 256-bit hashes (audio landmarks,
 * text MinHash): the public fields of a match, and for text the signature itself (hex) to score candidates.
 */
export const indexedAssets = softbinding.table(
  'indexed_assets',
  {
    tenantId: text('tenant_id').notNull(),
    assetId: text('asset_id').notNull(),
    alg: text('alg').notNull(),
    manifestId: text('manifest_id').notNull(),
    manifestUri: text('manifest_uri').notNull(),
    verifierUrl: text('verifier_url').notNull(),
    signature: text('signature'),
    features: integer('features').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.assetId, t.alg] }), ...tenantPolicies('indexed_assets', t.tenantId)],
);

/** Spectral-peak landmarks of signed audio: exact-matched by hash, then aligned in time (domain/audio.ts). */
export const audioLandmarks = softbinding.table(
  'audio_landmarks',
  {
    tenantId: text('tenant_id').notNull(),
    assetId: text('asset_id').notNull(),
    hash: integer('hash').notNull(),
    t: integer('t').notNull(),
  },
  (t) => [
    index('audio_landmarks_hash_idx').on(t.hash),
    index('audio_landmarks_asset_idx').on(t.tenantId, t.assetId),
    ...tenantPolicies('audio_landmarks', t.tenantId),
  ],
);

/** LSH band keys of text MinHash signatures: an asset is a candidate when it shares a band key (domain/text.ts). */
export const textBands = softbinding.table(
  'text_bands',
  {
    tenantId: text('tenant_id').notNull(),
    assetId: text('asset_id').notNull(),
    band: bigint('band', { mode: 'number' }).notNull(),
  },
  (t) => [
    index('text_bands_band_idx').on(t.band),
    index('text_bands_asset_idx').on(t.tenantId, t.assetId),
    ...tenantPolicies('text_bands', t.tenantId),
  ],
);

export const outbox = outboxTable(softbinding);
export const processedEvents = processedEventsTable(softbinding);

const bytea = customType<{ data: Buffer; driverData: Buffer }>({ dataType: () => 'bytea' });

/**
 * C2PA manifest stores tenants made elsewhere and keep in the resolution API's repository (POST /c2pa/v1/manifests):
 * the bytes as uploaded, owned by one tenant, readable by anyone (the public mode of `tenantPolicies`). Nothing of
 * Cairn's own signing or verifying reads this table: a stored manifest never becomes a Cairn asset.
 */
export const storedManifests = softbinding.table(
  'stored_manifests',
  {
    manifestId: text('manifest_id').primaryKey(),
    tenantId: text('tenant_id').notNull(),
    /** The active manifest's label (urn:c2pa:…), as the store names it: informative only, never a key. */
    label: text('label').notNull(),
    sha256: text('sha256').notNull(),
    bytes: bytea('bytes').notNull(),
    /** The repository receipt Cairn signed when storing it (JSON text). */
    receipt: text('receipt').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [index('stored_manifests_tenant_idx').on(t.tenantId), ...tenantPolicies('stored_manifests', t.tenantId)],
);

/**
 * Soft-binding values bound to stored manifests, by the manifest's own c2pa.soft-binding assertions (`source`
 * manifest) or through POST/PUT /c2pa/v1/bindings (`api`). `alg` is empty for a value bound without one (the spec's
 * binding body names none). One manifest per (tenant, alg, value).
 */
export const storedBindings = softbinding.table(
  'stored_bindings',
  {
    tenantId: text('tenant_id').notNull(),
    alg: text('alg').notNull(),
    value: text('value').notNull(),
    manifestId: text('manifest_id')
      .notNull()
      .references(() => storedManifests.manifestId, { onDelete: 'cascade' }),
    source: text('source').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.tenantId, t.alg, t.value] }),
    index('stored_bindings_value_idx').on(t.value),
    index('stored_bindings_manifest_idx').on(t.manifestId),
    ...tenantPolicies('stored_bindings', t.tenantId),
  ],
);
