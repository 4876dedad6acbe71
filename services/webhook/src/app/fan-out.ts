import type { AnyEvent } from '@cairn/events';
import type { Tx } from '@cairn/db';
import { buildPayload, isWebhookEvent } from '../domain/events.js';
import type { FanOutRecords } from './ports.js';

/**
 * Turns one event into one persisted delivery per subscribed endpoint of its tenant, due now. Runs in the
 * idempotent consumer's transaction (tenant set, event id claimed); the unique (webhook_id, event_id) makes
 * a replay harmless too. Returns how many endpoints are subscribed.
 */
export async function fanOut(event: AnyEvent, tx: Tx, records: FanOutRecords): Promise<number> {
  if (!isWebhookEvent(event.type)) return 0;
  const subscribed = await records.subscribedEndpoints(tx, event.tenant_id, event.type);
  if (subscribed.length === 0) return 0;
  await records.insertDueDeliveries(
    tx,
    { tenantId: event.tenant_id, eventId: event.event_id, eventType: event.type },
    subscribed.map((endpoint) => ({
      webhookId: endpoint.webhookId,
      payload: buildPayload(event, endpoint.payloadFormat),
    })),
  );
  return subscribed.length;
}
