import { sql } from 'drizzle-orm';
import { bigint, index, jsonb, pgPolicy, pgSchema, text, timestamp, uniqueIndex } from 'drizzle-orm/pg-core';
import { outboxTable, processedEventsTable, tenantPolicy } from '@cairn/db';

export const audit = pgSchema('audit');

/**
 * The audit log: one row per recorded event, per tenant, append-only and hash-chained: entry n carries
 * seq = n, prev_hash = hash of entry n-1 of the same tenant, and hash = SHA-256(prev_hash, canonical entry)
 * (domain/chain.ts). Editing or deleting any entry breaks the chain at that point.
 */
export const entries = audit.table(
  'entries',
  {
    entryId: text('entry_id').primaryKey(),
    tenantId: text('tenant_id').notNull(),
    eventId: text('event_id').notNull(),
    eventType: text('event_type').notNull(),
    occurredAt: timestamp('occurred_at', { withTimezone: true }).notNull(),
    recordedAt: timestamp('recorded_at', { withTimezone: true }).notNull().defaultNow(),
    data: jsonb('data').notNull(),
    seq: bigint('seq', { mode: 'number' }).notNull(),
    prevHash: text('prev_hash').notNull(),
    hash: text('hash').notNull(),
  },
  (t) => [
    uniqueIndex('entries_tenant_event_idx').on(t.tenantId, t.eventId),
    uniqueIndex('entries_tenant_seq_idx').on(t.tenantId, t.seq),
    index('entries_tenant_type_time_idx').on(t.tenantId, t.eventType, t.occurredAt),
    tenantPolicy('entries_isolation', t.tenantId),
    // The retention job lists which tenants have entries (and nothing else) under cairn.system = 'audit-retention'.
    pgPolicy('entries_retention_listing', {
      for: 'select',
      using: sql`current_setting('cairn.system', true) = 'audit-retention'`,
    }),
  ],
);

/**
 * Where a tenant's chain resumes after a retention purge: the last purged entry's seq and hash. The first
 * remaining entry's prev_hash must equal `hash`, so the surviving chain stays verifiable.
 */
export const checkpoints = audit.table(
  'chain_checkpoints',
  {
    tenantId: text('tenant_id').primaryKey(),
    seq: bigint('seq', { mode: 'number' }).notNull(),
    hash: text('hash').notNull(),
    purgedAt: timestamp('purged_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [tenantPolicy('chain_checkpoints_isolation', t.tenantId)],
);

/**
 * Continuous export (Enterprise): where a tenant's log goes, and how far it has been written. `exported_until`
 * is the end of the last window written; the exporter claims the next window with a row lock on this row, so a
 * window is written once, across exporters and restarts.
 */
export const exportConfigs = audit.table(
  'export_configs',
  {
    tenantId: text('tenant_id').primaryKey(),
    sink: text('sink', { enum: ['s3', 'filesystem'] }).notNull(),
    bucket: text('bucket'),
    prefix: text('prefix'),
    region: text('region'),
    endpoint: text('endpoint'),
    roleArn: text('role_arn'),
    path: text('path'),
    exportedUntil: timestamp('exported_until', { withTimezone: true }).notNull(),
    lastError: text('last_error'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    tenantPolicy('export_configs_isolation', t.tenantId),
    // The exporter lists configured tenants under cairn.system = 'audit-export'; each window is then claimed per tenant.
    pgPolicy('export_configs_listing', {
      for: 'select',
      using: sql`current_setting('cairn.system', true) = 'audit-export'`,
    }),
  ],
);

export const outbox = outboxTable(audit);
export const processedEvents = processedEventsTable(audit);
