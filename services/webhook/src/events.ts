import { and, arrayContains, eq, isNull, sql } from 'drizzle-orm';
import type { AnyEvent } from '@cairn/events';
import type { Tx } from '@cairn/db';
import { newId } from '@cairn/ids';
import { deliveries, endpoints } from './db/schema.js';
import { buildPayload, isWebhookEvent } from './domain/events.js';

/** Durable consumer name of the fan-out (one per purpose, stable across deploys). */
export const FANOUT_CONSUMER = 'webhook-fanout';

/**
 * Turns one event into one persisted delivery per subscribed endpoint of its tenant, due now. Runs in the
 * idempotent consumer's transaction (tenant set, event id claimed); the unique (webhook_id, event_id) makes
 * a replay harmless too. Returns how many endpoints are subscribed.
 */
export async function fanOut(event: AnyEvent, tx: Tx): Promise<number> {
  if (!isWebhookEvent(event.type)) return 0;
  const subscribed = await tx
    .select({ webhookId: endpoints.webhookId, payloadFormat: endpoints.payloadFormat })
    .from(endpoints)
    .where(
      and(
        eq(endpoints.tenantId, event.tenant_id),
        isNull(endpoints.deletedAt),
        arrayContains(endpoints.events, [event.type]),
      ),
    );
  if (subscribed.length === 0) return 0;
  await tx
    .insert(deliveries)
    .values(
      subscribed.map((endpoint) => ({
        deliveryId: newId('delivery'),
        webhookId: endpoint.webhookId,
        tenantId: event.tenant_id,
        eventId: event.event_id,
        eventType: event.type,
        payload: buildPayload(event, endpoint.payloadFormat),
        status: 'pending' as const,
        nextAttemptAt: sql`now()`,
      })),
    )
    .onConflictDoNothing();
  return subscribed.length;
}
