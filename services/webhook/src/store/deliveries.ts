import { and, arrayContains, asc, eq, inArray, isNull, lte, notInArray, sql } from 'drizzle-orm';
import type { Database, Tx } from '@cairn/db';
import { newId } from '@cairn/ids';
import { attempts, deliveries, endpoints } from '../db/schema.js';
import type {
  AttemptSummary,
  ClaimedDelivery,
  DeliveryAttempt,
  DeliveryQueue,
  DeliveryRow,
  FanOutRecords,
} from '../app/ports.js';
import type { PayloadFormat } from '../domain/events.js';

const afterMs = (ms: number) => sql`now() + ${ms} * interval '1 millisecond'`;

/** Runs `fn` as the delivery scheduler: it sees unfinished deliveries (and their endpoints) of every tenant. */
function asDispatcher<T>(db: Database, fn: (tx: Tx) => Promise<T>): Promise<T> {
  return db.transaction(async (tx) => {
    await tx.execute(sql`select set_config('cairn.system', 'webhook-dispatch', true)`);
    return fn(tx);
  });
}

/** The tenant's live endpoints subscribed to an event type. */
export async function subscribedEndpoints(
  tx: Tx,
  tenantId: string,
  eventType: string,
): Promise<{ webhookId: string; payloadFormat: PayloadFormat }[]> {
  return tx
    .select({ webhookId: endpoints.webhookId, payloadFormat: endpoints.payloadFormat })
    .from(endpoints)
    .where(
      and(eq(endpoints.tenantId, tenantId), isNull(endpoints.deletedAt), arrayContains(endpoints.events, [eventType])),
    );
}

/** One pending delivery per endpoint, due now; the unique (webhook_id, event_id) makes a replay insert nothing. */
export async function insertDueDeliveries(
  tx: Tx,
  event: { tenantId: string; eventId: string; eventType: string },
  payloads: { webhookId: string; payload: Record<string, unknown> }[],
): Promise<void> {
  await tx
    .insert(deliveries)
    .values(
      payloads.map((p) => ({
        deliveryId: newId('delivery'),
        webhookId: p.webhookId,
        tenantId: event.tenantId,
        eventId: event.eventId,
        eventType: event.eventType,
        payload: p.payload,
        status: 'pending' as const,
        nextAttemptAt: sql`now()`,
      })),
    )
    .onConflictDoNothing();
}

/**
 * Claims up to `free` due deliveries, at most one per endpoint, none of an endpoint in `busy` or under another
 * replica's live lease: each is marked `delivering` with a lease of `leaseMs`, and comes with its endpoint (one
 * transaction per batch, not one per attempt).
 */
export async function claimDue(
  db: Database,
  free: number,
  busy: string[],
  leaseMs: number,
): Promise<ClaimedDelivery[]> {
  return asDispatcher(db, async (tx) => {
    const candidates = await tx
      .select()
      .from(deliveries)
      .where(
        and(
          inArray(deliveries.status, ['pending', 'delivering']),
          lte(deliveries.nextAttemptAt, sql`now()`),
          busy.length > 0 ? notInArray(deliveries.webhookId, busy) : undefined,
          // Another replica's live lease on the same endpoint: leave the endpoint alone for now.
          sql`not exists (select 1 from webhook.deliveries x where x.webhook_id = ${deliveries.webhookId} and x.status = 'delivering' and x.next_attempt_at > now())`,
        ),
      )
      .orderBy(asc(deliveries.nextAttemptAt), asc(deliveries.createdAt))
      .limit(free * 4)
      .for('update', { skipLocked: true });
    const picked: DeliveryRow[] = [];
    const seen = new Set<string>();
    for (const candidate of candidates) {
      if (seen.has(candidate.webhookId)) continue;
      seen.add(candidate.webhookId);
      picked.push(candidate);
      if (picked.length >= free) break;
    }
    if (picked.length === 0) return [];
    // A row still `delivering` is one whose lease ran out: its attempt counts, whatever became of it.
    const claimed = await tx
      .update(deliveries)
      .set({
        status: 'delivering',
        nextAttemptAt: afterMs(leaseMs),
        attempts: sql`case when ${deliveries.status} = 'delivering' then ${deliveries.attempts} + 1 else ${deliveries.attempts} end`,
      })
      .where(
        inArray(
          deliveries.deliveryId,
          picked.map((p) => p.deliveryId),
        ),
      )
      .returning({ deliveryId: deliveries.deliveryId, attempts: deliveries.attempts });
    const owners = await tx
      .select()
      .from(endpoints)
      .where(inArray(endpoints.webhookId, [...seen]));
    return picked.map((delivery): ClaimedDelivery => {
      const attempts = claimed.find((c) => c.deliveryId === delivery.deliveryId)?.attempts ?? delivery.attempts;
      const lost = delivery.status === 'delivering' && delivery.nextAttemptAt;
      return {
        delivery: { ...delivery, status: 'delivering', attempts },
        endpoint: owners.find((e) => e.webhookId === delivery.webhookId),
        ...(lost ? { lostAttempt: { startedAt: new Date(delivery.nextAttemptAt!.getTime() - leaseMs) } } : {}),
      };
    });
  });
}

/**
 * Milliseconds until the earliest unfinished delivery is due (a retry, a lease running out; 0 when one is due
 * now), by the database's clock; null when there is none.
 */
export async function nextDueInMs(db: Database): Promise<number | null> {
  const [row] = await asDispatcher(db, (tx) =>
    tx
      .select({
        ms: sql<number | null>`(extract(epoch from (min(${deliveries.nextAttemptAt}) - now())) * 1000)::float8`,
      })
      .from(deliveries)
      .where(inArray(deliveries.status, ['pending', 'delivering'])),
  );
  return row?.ms === null || row?.ms === undefined ? null : Math.max(0, Number(row.ms));
}

/** An attempt cut short by a shutdown: the row is handed back, due now, and the attempt does not count. */
export async function handBack(db: Database, deliveryId: string): Promise<void> {
  await asDispatcher(db, (tx) =>
    tx
      .update(deliveries)
      .set({ status: 'pending', nextAttemptAt: sql`now()` })
      .where(and(eq(deliveries.deliveryId, deliveryId), eq(deliveries.status, 'delivering'))),
  );
}

/** Runs `fn` in a transaction scoped to the delivery's tenant. */
export async function inTenantTx<T>(db: Database, tenantId: string, fn: (tx: Tx) => Promise<T>): Promise<T> {
  return db.transaction(async (tx) => {
    await tx.execute(sql`select set_config('cairn.tenant_id', ${tenantId}, true)`);
    return fn(tx);
  });
}

export async function insertAttempt(tx: Tx, delivery: DeliveryRow, attempt: DeliveryAttempt): Promise<void> {
  await tx.insert(attempts).values({
    deliveryId: delivery.deliveryId,
    n: sql`(select coalesce(max(n), 0) + 1 from webhook.attempts where delivery_id = ${delivery.deliveryId})`,
    tenantId: delivery.tenantId,
    ...attempt,
  });
}

/** Only the claim this attempt ran under may move the row (a redelivery or an expired lease may have moved it). */
const claimGuard = (delivery: DeliveryRow) =>
  and(
    eq(deliveries.deliveryId, delivery.deliveryId),
    eq(deliveries.status, 'delivering'),
    eq(deliveries.attempts, delivery.attempts),
  );

export async function markDelivered(tx: Tx, delivery: DeliveryRow, last: AttemptSummary): Promise<void> {
  await tx
    .update(deliveries)
    .set({ ...last, status: 'delivered', deliveredAt: sql`now()`, nextAttemptAt: null })
    .where(claimGuard(delivery));
}

export async function scheduleRetry(
  tx: Tx,
  delivery: DeliveryRow,
  last: AttemptSummary,
  delayMs: number,
): Promise<void> {
  await tx
    .update(deliveries)
    .set({ ...last, status: 'pending', nextAttemptAt: afterMs(delayMs) })
    .where(claimGuard(delivery));
}

/** Marks the delivery failed; false when the row had moved on (another claim owns it now). */
export async function markFailed(tx: Tx, delivery: DeliveryRow, last: AttemptSummary): Promise<boolean> {
  const moved = await tx
    .update(deliveries)
    .set({ ...last, status: 'failed', nextAttemptAt: null })
    .where(claimGuard(delivery))
    .returning({ id: deliveries.deliveryId });
  return moved.length > 0;
}

/** The fan-out's statements and the dispatcher's queue, over one database (service.ts injects them). */
export function deliveryStore(db: Database): FanOutRecords & DeliveryQueue {
  return {
    subscribedEndpoints,
    insertDueDeliveries,
    claimDue: (free, busy, leaseMs) => claimDue(db, free, busy, leaseMs),
    nextDueInMs: () => nextDueInMs(db),
    handBack: (deliveryId) => handBack(db, deliveryId),
    inTenantTx: (tenantId, fn) => inTenantTx(db, tenantId, fn),
    insertAttempt,
    markDelivered,
    scheduleRetry,
    markFailed,
  };
}
