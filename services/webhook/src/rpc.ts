import { and, desc, eq, inArray, isNull, sql, asc } from 'drizzle-orm';
import type { GenService } from '@bufbuild/protobuf/codegenv2';
import { withTenant, type Database, type Tx } from '@cairn/db';
import { CairnError } from '@cairn/errors';
import { isId, newId, newWebhookSecret } from '@cairn/ids';
import type { webhookV1 } from '@cairn/proto';
import type { ServiceImpl } from '@cairn/rpc';
import { attempts, deliveries, endpoints, type PayloadFormat } from './db/schema.js';
import { checkEndpointUrl, type DestinationPolicy } from './domain/address-policy.js';
import { WEBHOOK_EVENTS, isWebhookEvent } from './domain/events.js';
import type { Sealer } from '@cairn/sealing';

type Methods = typeof webhookV1.WebhookService extends GenService<infer M> ? M : never;
type EndpointRow = typeof endpoints.$inferSelect;
type DeliveryRow = typeof deliveries.$inferSelect;
type AttemptRow = typeof attempts.$inferSelect;

const MAX_ENDPOINT_PAGE = 100;
const MAX_DELIVERY_PAGE = 100;

function presentEndpoint(row: EndpointRow) {
  return {
    webhookId: row.webhookId,
    tenantId: row.tenantId,
    url: row.url,
    events: row.events,
    description: row.description ?? '',
    payloadFormat: row.payloadFormat,
    createdAt: row.createdAt.toISOString(),
  };
}

function presentDelivery(row: DeliveryRow, log: AttemptRow[]) {
  return {
    deliveryId: row.deliveryId,
    webhookId: row.webhookId,
    eventId: row.eventId,
    eventType: row.eventType,
    status: row.status,
    attempts: row.attempts,
    nextAttemptAt:
      row.status === 'pending' || row.status === 'delivering' ? (row.nextAttemptAt?.toISOString() ?? '') : '',
    lastStatusCode: row.lastStatusCode ?? 0,
    lastError: row.lastError ?? '',
    lastLatencyMs: row.lastLatencyMs ?? 0,
    createdAt: row.createdAt.toISOString(),
    deliveredAt: row.deliveredAt?.toISOString() ?? '',
    attemptLog: log
      .sort((a, b) => a.n - b.n)
      .map((a) => ({
        n: a.n,
        startedAt: a.startedAt.toISOString(),
        statusCode: a.statusCode ?? 0,
        latencyMs: a.latencyMs,
        error: a.error ?? '',
      })),
  };
}

function requireTenant(tenantId: string): string {
  if (!tenantId) throw new CairnError('cairn.validation.invalid_body', 'tenant_id is required');
  return tenantId;
}

function validEvents(events: readonly string[]): string[] {
  if (events.length === 0)
    throw new CairnError(
      'cairn.webhook.unknown_event',
      `events must name at least one of: ${WEBHOOK_EVENTS.join(', ')}.`,
    );
  const unknown = events.filter((e) => !isWebhookEvent(e));
  if (unknown.length > 0) {
    throw new CairnError(
      'cairn.webhook.unknown_event',
      `Unknown event${unknown.length > 1 ? 's' : ''} ${unknown.map((e) => JSON.stringify(e)).join(', ')}; allowed: ${WEBHOOK_EVENTS.join(', ')}.`,
    );
  }
  return [...new Set(events)];
}

async function liveEndpoint(tx: Tx, tenantId: string, webhookId: string): Promise<EndpointRow> {
  const [row] = isId('webhook', webhookId)
    ? await tx
        .select()
        .from(endpoints)
        .where(and(eq(endpoints.tenantId, tenantId), eq(endpoints.webhookId, webhookId), isNull(endpoints.deletedAt)))
    : [];
  if (!row) throw new CairnError('cairn.not_found', `Webhook ${webhookId} not found.`);
  return row;
}

export interface WebhookRpcDeps {
  db: Database;
  sealer: Sealer;
  policy: DestinationPolicy;
  /** Called after a redelivery is scheduled, so it goes out now rather than at the next poll. */
  wake: () => void;
}

/** cairn.webhook.v1.WebhookService: a tenant's endpoints and deliveries (RLS scopes every query to it). */
export function webhookHandlers(deps: WebhookRpcDeps): ServiceImpl<Methods> {
  const { db, sealer, policy } = deps;
  return {
    createEndpoint: async (request) => {
      const tenantId = requireTenant(request.tenantId);
      const url = checkEndpointUrl(request.url, policy);
      const events = validEvents(request.events);
      const format = (request.payloadFormat || 'a') as PayloadFormat;
      if (format !== 'a' && format !== 'b')
        throw new CairnError('cairn.validation.invalid_body', 'payload_format must be "a" or "b".');
      if (request.description.length > 500)
        throw new CairnError('cairn.validation.invalid_body', 'description must be at most 500 characters.');
      const webhookId = newId('webhook');
      const secret = newWebhookSecret();
      const [row] = await withTenant(db, tenantId, (tx) =>
        tx
          .insert(endpoints)
          .values({
            webhookId,
            tenantId,
            url: url.toString(),
            events,
            description: request.description || null,
            payloadFormat: format,
            sealedSecret: sealer.seal(secret, webhookId),
          })
          .returning(),
      );
      return { endpoint: presentEndpoint(row!), secret };
    },

    listEndpoints: async (request) => {
      const tenantId = requireTenant(request.tenantId);
      const limit = Math.min(Math.max(request.limit || 50, 1), MAX_ENDPOINT_PAGE);
      const rows = await withTenant(db, tenantId, (tx) =>
        tx
          .select()
          .from(endpoints)
          .where(and(eq(endpoints.tenantId, tenantId), isNull(endpoints.deletedAt)))
          .orderBy(asc(endpoints.createdAt))
          .limit(limit),
      );
      return { endpoints: rows.map(presentEndpoint) };
    },

    getEndpoint: async (request) => {
      const tenantId = requireTenant(request.tenantId);
      return {
        endpoint: presentEndpoint(
          await withTenant(db, tenantId, (tx) => liveEndpoint(tx, tenantId, request.webhookId)),
        ),
      };
    },

    deleteEndpoint: async (request) => {
      const tenantId = requireTenant(request.tenantId);
      const row = await withTenant(db, tenantId, async (tx) => {
        await liveEndpoint(tx, tenantId, request.webhookId);
        const [deleted] = await tx
          .update(endpoints)
          .set({ deletedAt: sql`now()` })
          .where(eq(endpoints.webhookId, request.webhookId))
          .returning();
        return deleted!;
      });
      return { endpoint: presentEndpoint(row) };
    },

    rotateSecret: async (request) => {
      const tenantId = requireTenant(request.tenantId);
      const secret = newWebhookSecret();
      const row = await withTenant(db, tenantId, async (tx) => {
        await liveEndpoint(tx, tenantId, request.webhookId);
        const [rotated] = await tx
          .update(endpoints)
          .set({ sealedSecret: sealer.seal(secret, request.webhookId) })
          .where(eq(endpoints.webhookId, request.webhookId))
          .returning();
        return rotated!;
      });
      return { endpoint: presentEndpoint(row), secret };
    },

    listDeliveries: async (request) => {
      const tenantId = requireTenant(request.tenantId);
      const limit = Math.min(Math.max(request.limit || 20, 1), MAX_DELIVERY_PAGE);
      const { rows, log } = await withTenant(db, tenantId, async (tx) => {
        await liveEndpoint(tx, tenantId, request.webhookId);
        const rows = await tx
          .select()
          .from(deliveries)
          .where(and(eq(deliveries.tenantId, tenantId), eq(deliveries.webhookId, request.webhookId)))
          .orderBy(desc(deliveries.createdAt), desc(deliveries.deliveryId))
          .limit(limit);
        const log =
          rows.length > 0
            ? await tx
                .select()
                .from(attempts)
                .where(
                  inArray(
                    attempts.deliveryId,
                    rows.map((r) => r.deliveryId),
                  ),
                )
            : [];
        return { rows, log };
      });
      return {
        deliveries: rows.map((row) =>
          presentDelivery(
            row,
            log.filter((a) => a.deliveryId === row.deliveryId),
          ),
        ),
      };
    },

    redeliver: async (request) => {
      const tenantId = requireTenant(request.tenantId);
      const result = await withTenant(db, tenantId, async (tx) => {
        await liveEndpoint(tx, tenantId, request.webhookId);
        const [row] = await tx
          .select()
          .from(deliveries)
          .where(
            and(
              eq(deliveries.tenantId, tenantId),
              eq(deliveries.webhookId, request.webhookId),
              eq(deliveries.deliveryId, request.deliveryId),
            ),
          );
        if (!row) throw new CairnError('cairn.not_found', `Delivery ${request.deliveryId} not found.`);
        // An attempt in flight finishes on its own; anything else starts a fresh cycle of five attempts now.
        const [updated] =
          row.status === 'delivering'
            ? [row]
            : await tx
                .update(deliveries)
                .set({ status: 'pending', attempts: 0, nextAttemptAt: sql`now()` })
                .where(eq(deliveries.deliveryId, row.deliveryId))
                .returning();
        const log = await tx.select().from(attempts).where(eq(attempts.deliveryId, row.deliveryId));
        return presentDelivery(updated!, log);
      });
      deps.wake();
      return { delivery: result };
    },
  };
}
