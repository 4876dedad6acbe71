import { sql } from 'drizzle-orm';
import { boolean, integer, jsonb, numeric, pgPolicy, pgSchema, text, timestamp, index } from 'drizzle-orm/pg-core';
import { outboxTable, processedEventsTable } from '@cairn/db';

export const tenant = pgSchema('tenant');

const currentTenant = sql`current_setting('cairn.tenant_id', true)`;

/**
 * Tenants. A tenant sees its own row and its sub-tenants' rows (a parent manages its children); nothing else.
 */
export const tenants = tenant.table(
  'tenants',
  {
    tenantId: text('tenant_id').primaryKey(),
    parentTenantId: text('parent_tenant_id'),
    name: text('name').notNull(),
    email: text('email'),
    plan: text('plan').notNull(),
    spendingCapUsd: numeric('spending_cap_usd', { precision: 14, scale: 2, mode: 'number' }),
    auditRetentionDays: integer('audit_retention_days').notNull(),
    rateLimitRps: integer('rate_limit_rps').notNull(),
    rateLimitDaily: integer('rate_limit_daily').notNull(),
    paymentCustomerRef: text('payment_customer_ref'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
  },
  (t) => [
    index('tenants_parent_idx').on(t.parentTenantId),
    pgPolicy('tenants_isolation', {
      for: 'all',
      using: sql`${t.tenantId} = ${currentTenant} or ${t.parentTenantId} = ${currentTenant}`,
      withCheck: sql`${t.tenantId} = ${currentTenant} or ${t.parentTenantId} = ${currentTenant}`,
    }),
  ],
);

/**
 * API keys, stored as SHA-256 of the whole key. A request that presents a key may read that one row by its
 * key id (`cairn.key_id`) before it knows the tenant; everything else is by tenant.
 */
export const apiKeys = tenant.table(
  'api_keys',
  {
    keyId: text('key_id').primaryKey(),
    tenantId: text('tenant_id').notNull(),
    keyHash: text('key_hash').notNull(),
    scope: text('scope').notNull(),
    description: text('description'),
    expiresAt: timestamp('expires_at', { withTimezone: true }),
    revokedAt: timestamp('revoked_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    /** When key.expiring was emitted (7 days before expires_at, once). */
    expiringNotifiedAt: timestamp('expiring_notified_at', { withTimezone: true }),
  },
  (t) => [
    index('api_keys_tenant_idx').on(t.tenantId),
    // The key-expiry sweep sees live keys not yet notified that expire within 7 days, of every tenant, and nothing else.
    pgPolicy('api_keys_expiry_sweep', {
      for: 'all',
      // (Not narrower: an UPDATE's new row must still pass this, so it cannot depend on the column the sweep sets.)
      using: sql`current_setting('cairn.system', true) = 'key-expiry' and ${t.expiresAt} is not null and ${t.revokedAt} is null`,
      withCheck: sql`current_setting('cairn.system', true) = 'key-expiry'`,
    }),
    pgPolicy('api_keys_isolation', {
      for: 'all',
      using: sql`${t.tenantId} = ${currentTenant} or ${t.keyId} = current_setting('cairn.key_id', true)`,
      withCheck: sql`${t.tenantId} = ${currentTenant}`,
    }),
  ],
);

/**
 * One row per onboarding Idempotency-Key: the request's hash and the sealed (AES-GCM) answer, so a replay
 * gets the same tenant and key and a different payload is refused. Readable only by presenting the key. The
 * sealed answer (it holds an admin key) is kept for the replay window only: the sweep, as
 * `cairn.system = 'onboard-replay-expiry'`, nulls it once the window is over.
 */
export const onboardingRequests = tenant.table(
  'onboarding_requests',
  {
    idempotencyKey: text('idempotency_key').primaryKey(),
    requestHash: text('request_hash').notNull(),
    tenantId: text('tenant_id').notNull(),
    sealedResponse: text('sealed_response'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    /** 'in_progress' while the payment call runs (no transaction open), 'done' once the tenant exists. */
    state: text('state').notNull().default('done'),
    /** Which attempt holds the claim: only it may finish or drop the row (a takeover gives it a new one). */
    claimId: text('claim_id'),
    /** Past this an in_progress claim is abandoned (its process died) and may be taken over. */
    leaseExpiresAt: timestamp('lease_expires_at', { withTimezone: true }),
  },
  (t) => [
    pgPolicy('onboarding_requests_replay_expiry', {
      for: 'all',
      // (Not narrower: an UPDATE's new row must still pass this, so it cannot depend on the column the sweep nulls.)
      using: sql`current_setting('cairn.system', true) = 'onboard-replay-expiry'`,
      withCheck: sql`current_setting('cairn.system', true) = 'onboard-replay-expiry'`,
    }),
    pgPolicy('onboarding_requests_by_key', {
      for: 'all',
      using: sql`${t.idempotencyKey} = current_setting('cairn.idempotency_key', true)`,
      withCheck: sql`${t.idempotencyKey} = current_setting('cairn.idempotency_key', true)`,
    }),
  ],
);

/** The recipe catalog: global (not tenant-owned), seeded at start from domain/recipes.ts. */
export const recipes = tenant.table('recipes', {
  recipeId: text('recipe_id').primaryKey(),
  definition: jsonb('definition').notNull(),
  active: boolean('active').notNull().default(true),
  updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
});

export const outbox = outboxTable(tenant);
export const processedEvents = processedEventsTable(tenant);
