import { CairnError } from '@cairn/errors';
import { parseActorKeyId } from '@cairn/events';
import { deliveryStates, toOptionalTimestamp, toTimestamp, type webhookV1 } from '@cairn/proto';
import type { ImplOf } from '@cairn/rpc';
import type { AttemptRow, DeliveryRow, EndpointRow, Endpoints } from './app/endpoints.js';

function presentEndpoint(row: EndpointRow) {
  return {
    webhookId: row.webhookId,
    tenantId: row.tenantId,
    url: row.url,
    events: row.events,
    description: row.description ?? '',
    payloadFormat: row.payloadFormat,
    createdAt: toTimestamp(row.createdAt),
    ...(row.previousSecretExpiresAt && row.previousSecretExpiresAt > new Date()
      ? { previousSecretExpiresAt: toTimestamp(row.previousSecretExpiresAt) }
      : {}),
  };
}

function presentDelivery(row: DeliveryRow, log: AttemptRow[]) {
  return {
    deliveryId: row.deliveryId,
    webhookId: row.webhookId,
    eventId: row.eventId,
    eventType: row.eventType,
    status: deliveryStates.toProto(row.status),
    attempts: row.attempts,
    ...((row.status === 'pending' || row.status === 'delivering') && row.nextAttemptAt
      ? { nextAttemptAt: toTimestamp(row.nextAttemptAt) }
      : {}),
    lastStatusCode: row.lastStatusCode ?? 0,
    lastError: row.lastError ?? '',
    lastLatencyMs: row.lastLatencyMs ?? 0,
    createdAt: toTimestamp(row.createdAt),
    deliveredAt: toOptionalTimestamp(row.deliveredAt),
    attemptLog: log
      .sort((a, b) => a.n - b.n)
      .map((a) => ({
        n: a.n,
        startedAt: toTimestamp(a.startedAt),
        statusCode: a.statusCode ?? 0,
        latencyMs: a.latencyMs,
        error: a.error ?? '',
      })),
  };
}

/** The API key an admin change names as its actor (audit entry); a value that is not a key id is refused. */
function actorKeyIdOf(raw: string): string | null {
  const actor = parseActorKeyId(raw);
  if (actor === undefined) throw new CairnError('cairn.validation.invalid_body', 'actor_key_id must be an API key id');
  return actor;
}

function requireTenant(tenantId: string): string {
  if (!tenantId) throw new CairnError('cairn.validation.invalid_body', 'tenant_id is required');
  return tenantId;
}

/** cairn.webhook.v1.WebhookService: a tenant's endpoints and deliveries (RLS scopes every query to it). */
export function webhookHandlers(endpoints: Endpoints): ImplOf<typeof webhookV1.WebhookService> {
  return {
    createEndpoint: async (request) => {
      const { endpoint, secret } = await endpoints.create({
        tenantId: requireTenant(request.tenantId),
        url: request.url,
        events: request.events,
        payloadFormat: request.payloadFormat,
        description: request.description,
        actorKeyId: actorKeyIdOf(request.actorKeyId),
      });
      return { endpoint: presentEndpoint(endpoint), secret };
    },

    listEndpoints: async (request) => {
      const rows = await endpoints.list(requireTenant(request.tenantId), request.limit);
      return { endpoints: rows.map(presentEndpoint) };
    },

    getEndpoint: async (request) => ({
      endpoint: presentEndpoint(await endpoints.get(requireTenant(request.tenantId), request.webhookId)),
    }),

    deleteEndpoint: async (request) => ({
      endpoint: presentEndpoint(
        await endpoints.delete(requireTenant(request.tenantId), request.webhookId, actorKeyIdOf(request.actorKeyId)),
      ),
    }),

    rotateSecret: async (request) => {
      const { endpoint, secret } = await endpoints.rotateSecret(
        requireTenant(request.tenantId),
        request.webhookId,
        request.overlapSeconds,
        actorKeyIdOf(request.actorKeyId),
      );
      return { endpoint: presentEndpoint(endpoint), secret };
    },

    listDeliveries: async (request) => {
      const { rows, log } = await endpoints.deliveries(
        requireTenant(request.tenantId),
        request.webhookId,
        request.limit,
      );
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
      const { delivery, log } = await endpoints.redeliver(
        requireTenant(request.tenantId),
        request.webhookId,
        request.deliveryId,
      );
      return { delivery: presentDelivery(delivery, log) };
    },
  };
}
