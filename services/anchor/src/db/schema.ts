import { sql } from 'drizzle-orm';
import {
  bigint,
  index,
  integer,
  pgPolicy,
  pgSchema,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core';
import { outboxTable, processedEventsTable, tenantPolicy } from '@cairn/db';

/** The anchor service's own schema; no other service reads it. */
export const anchor = pgSchema('anchor');

export const outbox = outboxTable(anchor);
export const processedEvents = processedEventsTable(anchor);

/**
 * A batch of manifest digests: open (taking leaves) → closed (Merkle root fixed, not yet on chain) → pending
 * (signed transaction recorded, broadcast) → anchored (N confirmations). System rows: they name no tenant and
 * hold nothing a tenant owns (a root, a size, a transaction), so they carry no RLS.
 */
export const batches = anchor.table(
  'batches',
  {
    batchId: text('batch_id').primaryKey(),
    status: text('status', { enum: ['open', 'closed', 'pending', 'anchored'] }).notNull(),
    size: integer('size').notNull().default(0),
    merkleRoot: text('merkle_root'),
    openedAt: timestamp('opened_at', { withTimezone: true }).notNull().defaultNow(),
    closedAt: timestamp('closed_at', { withTimezone: true }),
    chainId: bigint('chain_id', { mode: 'number' }),
    fromAddress: text('from_address'),
    txHash: text('tx_hash'),
    txNonce: integer('tx_nonce'),
    /** The signed transaction: re-broadcast as is when the node lost it (same hash, same nonce). */
    rawTx: text('raw_tx'),
    broadcasts: integer('broadcasts').notNull().default(0),
    sentAt: timestamp('sent_at', { withTimezone: true }),
    blockNumber: bigint('block_number', { mode: 'number' }),
    /** Confirmations last seen by the watcher while pending (head − block + 1); the final count once anchored. */
    confirmations: integer('confirmations').notNull().default(0),
    confirmedAt: timestamp('confirmed_at', { withTimezone: true }),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: timestamp('next_attempt_at', { withTimezone: true }),
    lastError: text('last_error'),
  },
  (t) => [
    // At most one open batch: enqueues serialise on its row lock, which also hands out leaf indexes.
    uniqueIndex('batches_one_open_idx')
      .on(t.status)
      .where(sql`status = 'open'`),
    index('batches_status_idx').on(t.status),
  ],
);

const batcher = sql`current_setting('cairn.system', true) = 'anchor-batcher'`;

/**
 * One manifest digest in a batch, at a fixed leaf index. Tenant-owned: RLS (FORCE'd) opens a tenant's own rows;
 * the batcher reads a whole batch (to build the tree and the proofs) under cairn.system = 'anchor-batcher'.
 */
export const leaves = anchor.table(
  'leaves',
  {
    batchId: text('batch_id').notNull(),
    leafIndex: integer('leaf_index').notNull(),
    tenantId: text('tenant_id').notNull(),
    assetId: text('asset_id').notNull(),
    manifestId: text('manifest_id').notNull(),
    manifestDigest: text('manifest_digest').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.batchId, t.leafIndex] }),
    uniqueIndex('leaves_tenant_manifest_idx').on(t.tenantId, t.manifestId),
    index('leaves_tenant_asset_idx').on(t.tenantId, t.assetId),
    // The verifier's anchor check finds an asset's leaf without its tenant (public verify).
    index('leaves_asset_idx').on(t.assetId),
    tenantPolicy('leaves_isolation', t.tenantId),
    pgPolicy('leaves_batcher', { for: 'select', using: batcher }),
  ],
);
