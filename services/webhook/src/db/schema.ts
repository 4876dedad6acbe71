import { sql } from 'drizzle-orm';
import {
  index,
  integer,
  jsonb,
  pgPolicy,
  pgSchema,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
} from 'drizzle-orm/pg-core';
import { outboxTable, processedEventsTable, tenantPolicy } from '@cairn/db';
import type { PayloadFormat } from '../domain/events.js';

/** The webhook service's own schema; no other service reads it. */
export const webhook = pgSchema('webhook');

/** The delivery scheduler's setting: it claims due deliveries of every tenant, and nothing else. */
const dispatcher = sql`current_setting('cairn.system', true) = 'webhook-dispatch'`;

export type DeliveryStatus = 'pending' | 'delivering' | 'delivered' | 'failed';

/** A tenant's receivers. The secret is sealed (AES-256-GCM): signing needs the plaintext, so it is not hashed. */
export const endpoints = webhook.table(
  'endpoints',
  {
    webhookId: text('webhook_id').primaryKey(),
    tenantId: text('tenant_id').notNull(),
    url: text('url').notNull(),
    events: text('events').array().notNull(),
    description: text('description'),
    payloadFormat: text('payload_format').$type<PayloadFormat>().notNull().default('a'),
    sealedSecret: text('sealed_secret').notNull(),
    // The secret a rotation replaced, still signing beside the new one until the overlap ends (RotateSecret).
    previousSealedSecret: text('previous_sealed_secret'),
    previousSecretExpiresAt: timestamp('previous_secret_expires_at', { withTimezone: true }),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    deletedAt: timestamp('deleted_at', { withTimezone: true }),
  },
  (t) => [
    index('endpoints_tenant_idx').on(t.tenantId, t.createdAt),
    tenantPolicy('endpoints_tenant', t.tenantId),
    // The dispatcher reads the endpoint (url, sealed secret) of a delivery it claimed; it never writes one.
    pgPolicy('endpoints_dispatch', { for: 'select', using: dispatcher }),
  ],
);

/** One event for one endpoint: persisted at fan-out, so the schedule survives restarts. */
export const deliveries = webhook.table(
  'deliveries',
  {
    deliveryId: text('delivery_id').primaryKey(),
    webhookId: text('webhook_id').notNull(),
    tenantId: text('tenant_id').notNull(),
    eventId: text('event_id').notNull(),
    eventType: text('event_type').notNull(),
    payload: jsonb('payload').$type<Record<string, unknown>>().notNull(),
    status: text('status').$type<DeliveryStatus>().notNull().default('pending'),
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: timestamp('next_attempt_at', { withTimezone: true }),
    lastStatusCode: integer('last_status_code'),
    lastError: text('last_error'),
    lastLatencyMs: integer('last_latency_ms'),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    deliveredAt: timestamp('delivered_at', { withTimezone: true }),
  },
  (t) => [
    uniqueIndex('deliveries_webhook_event_idx').on(t.webhookId, t.eventId),
    index('deliveries_webhook_created_idx').on(t.webhookId, t.createdAt),
    index('deliveries_due_idx')
      .on(t.nextAttemptAt)
      .where(sql`${t.status} in ('pending', 'delivering')`),
    tenantPolicy('deliveries_tenant', t.tenantId),
    // The dispatcher claims (select ... for update, update status/lease) unfinished deliveries of any tenant.
    pgPolicy('deliveries_dispatch', {
      for: 'all',
      using: sql`${dispatcher} and ${t.status} in ('pending', 'delivering')`,
      withCheck: sql`${dispatcher}`,
    }),
  ],
);

/** Every attempt of a delivery: response code, latency, error (a truncated response body excerpt). */
export const attempts = webhook.table(
  'attempts',
  {
    deliveryId: text('delivery_id').notNull(),
    n: integer('n').notNull(),
    tenantId: text('tenant_id').notNull(),
    startedAt: timestamp('started_at', { withTimezone: true }).notNull(),
    statusCode: integer('status_code'),
    latencyMs: integer('latency_ms').notNull(),
    error: text('error'),
    responseBody: text('response_body'),
  },
  (t) => [primaryKey({ columns: [t.deliveryId, t.n] }), tenantPolicy('attempts_tenant', t.tenantId)],
);

export const outbox = outboxTable(webhook);
export const processedEvents = processedEventsTable(webhook);
