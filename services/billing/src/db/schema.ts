import { sql } from 'drizzle-orm';
import { bigint, date, index, integer, pgPolicy, pgSchema, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';
import { outboxTable, processedEventsTable, tenantPolicy } from '@cairn/db';

/** The billing service's own schema; no other service reads it. */
export const billing = pgSchema('billing');

/**
 * One row per (tenant, meter, UTC month): the counter every reservation locks (a conditional
 * `insert ... on conflict do update ... where used + reserved + quantity <= quota`), so concurrent reserves of a
 * meter are serialized and `used + reserved` never passes the quota.
 */
export const counters = billing.table(
  'counters',
  {
    tenantId: text('tenant_id').notNull(),
    meter: text('meter').notNull(),
    periodStart: date('period_start', { mode: 'string' }).notNull(),
    used: bigint('used', { mode: 'number' }).notNull().default(0),
    reserved: bigint('reserved', { mode: 'number' }).notNull().default(0),
    overageUnits: bigint('overage_units', { mode: 'number' }).notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.meter, t.periodStart] }), tenantPolicy('counters_tenant', t.tenantId)],
);

/** Overage spend per (tenant, month) in micro-USD, reserved and committed together (the spending cap's basis). */
export const spend = billing.table(
  'spend',
  {
    tenantId: text('tenant_id').notNull(),
    periodStart: date('period_start', { mode: 'string' }).notNull(),
    micros: bigint('micros', { mode: 'number' }).notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.periodStart] }), tenantPolicy('spend_tenant', t.tenantId)],
);

/**
 * Reservations: reserved -> committed | released. The expiry sweep (`cairn.system = 'billing-sweep'`) may
 * see open reservations (to find those past their expiry) and nothing else; it releases each under its tenant.
 */
export const reservations = billing.table(
  'reservations',
  {
    reservationId: text('reservation_id').primaryKey(),
    tenantId: text('tenant_id').notNull(),
    meter: text('meter').notNull(),
    periodStart: date('period_start', { mode: 'string' }).notNull(),
    quantity: integer('quantity').notNull(),
    overageUnits: integer('overage_units').notNull(),
    overageMicros: bigint('overage_micros', { mode: 'number' }).notNull(),
    status: text('status').notNull(),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    expiresAt: timestamp('expires_at', { withTimezone: true }).notNull(),
    settledAt: timestamp('settled_at', { withTimezone: true }),
  },
  (t) => [
    index('reservations_open_idx')
      .on(t.expiresAt)
      .where(sql`status = 'reserved'`),
    tenantPolicy('reservations_tenant', t.tenantId),
    pgPolicy('reservations_sweep', {
      for: 'all',
      using: sql`current_setting('cairn.system', true) = 'billing-sweep' and ${t.status} = 'reserved'`,
    }),
  ],
);

/** Per-tenant quota overrides: enterprise contracts, operator adjustments. */
export const quotas = billing.table(
  'quotas',
  {
    tenantId: text('tenant_id').notNull(),
    meter: text('meter').notNull(),
    quota: bigint('quota', { mode: 'number' }).notNull(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.meter] }), tenantPolicy('quotas_tenant', t.tenantId)],
);

/** "Sent" markers: each alert (quota warning/exceeded per meter, spending-cap warning) once per tenant and month. */
export const alerts = billing.table(
  'alerts',
  {
    tenantId: text('tenant_id').notNull(),
    periodStart: date('period_start', { mode: 'string' }).notNull(),
    alert: text('alert').notNull(),
    sentAt: timestamp('sent_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.periodStart, t.alert] }), tenantPolicy('alerts_tenant', t.tenantId)],
);

export const outbox = outboxTable(billing);
export const processedEvents = processedEventsTable(billing);
