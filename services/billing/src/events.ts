import type { EventOf } from '@cairn/events';
import type { Tx } from '@cairn/db';
import { isCairnError } from '@cairn/errors';
import type { Logger } from '@cairn/logging';
import type { tenantV1 } from '@cairn/proto';
import type { ClientOf } from '@cairn/rpc';
import { isMeter, isPlanName, type PlanName } from '@cairn/catalog';
import type { Metering } from './app/metering.js';

export type TenantClient = ClientOf<typeof tenantV1.TenantService>;

/** Durable consumer metering facts that carry `billing.meter` after the work is done (anchor.confirmed). */
export const EVENT_METER_CONSUMER = 'billing-event-meter';

/** Event types metered from the bus; signs and verifies reserve synchronously, and are committed from their events. */
export const METERED_EVENT_TYPES = ['anchor.confirmed'] as const;
type MeteredEventType = (typeof METERED_EVENT_TYPES)[number];

/**
 * Records an event's `billing.meter` × `billing.quantity` for its tenant, inside the consumer's
 * transaction that claims the event id: once per event however often it is delivered. anchor.confirmed is
 * written once per tenant per batch, so a tenant's anchor_batch counts each batch it has manifests in once.
 * The plan (quota, overage price) is asked of the tenant service; a tenant it does not know is recorded
 * without a plan (counted, not charged); the tenant service being down fails the handler and the event comes again.
 */
export function meterEvent(metering: Metering, tenants: TenantClient, logger: Logger) {
  return async (event: EventOf<MeteredEventType>, tx: Tx): Promise<void> => {
    const meter = event.data['billing.meter'];
    const quantity = event.data['billing.quantity'];
    if (!isMeter(meter)) {
      logger.warn(
        { event_id: event.event_id, type: event.type, meter, quantity },
        'event carries a billing.meter billing does not know; not metered',
      );
      return;
    }
    let plan: PlanName | null = null;
    try {
      const { tenant } = await tenants.getTenant({ tenantId: event.tenant_id }, { deadlineMs: 5000 });
      if (tenant && isPlanName(tenant.plan)) plan = tenant.plan;
    } catch (error) {
      if (!(isCairnError(error) && error.code === 'cairn.not_found')) throw error;
      logger.warn(
        { event_id: event.event_id, tenant_id: event.tenant_id },
        'metered event for a tenant the tenant service does not know; recorded without a plan',
      );
    }
    await metering.recordUsed(tx, { tenantId: event.tenant_id, meter, plan, quantity, at: new Date(event.created_at) });
  };
}

/** Durable consumer committing the reservations a recorded sign names (asset.signed). */
export const SIGN_SETTLEMENT_CONSUMER = 'billing-sign-settlement';

export const SIGN_RECORDED_EVENT_TYPES = ['asset.signed'] as const;

/** Durable consumer committing the reservation a synchronous verify names (asset.verified); one type per consumer. */
export const VERIFY_SETTLEMENT_CONSUMER = 'billing-verify-settlement';

export const VERIFY_RECORDED_EVENT_TYPES = ['asset.verified'] as const;

/**
 * Commits the reservation(s) an asset.signed or asset.verified names. The signer (the verifier) writes the event
 * in the transaction that records the sign (the verify), so this is the half of their metering that survives
 * anything: the gateway answers without committing, and billing may be down then (killed, restarting); the event
 * arrives once billing is back. Commit is idempotent (a repeat is a no-op) and bills a reservation the expiry sweep
 * or the gateway released meanwhile (the work was done), so each recorded sign or verify is counted exactly once.
 */
export function commitRecordedReservations(metering: Metering, logger: Logger) {
  return async (
    event: EventOf<(typeof SIGN_RECORDED_EVENT_TYPES)[number] | (typeof VERIFY_RECORDED_EVENT_TYPES)[number]>,
  ): Promise<void> => {
    const ids =
      event.type === 'asset.signed'
        ? [event.data.reservation_id, event.data.byok_reservation_id]
        : [event.data.reservation_id];
    for (const id of ids) {
      if (!id) continue;
      try {
        await metering.commit(event.tenant_id, id);
      } catch (error) {
        if (!(isCairnError(error) && error.code === 'cairn.not_found')) throw error;
        logger.warn(
          { reservation_id: id, event_id: event.event_id },
          'recorded reservation not found; nothing to commit',
        );
      }
    }
  };
}

/** Durable consumer settling the reservations of asynchronous signs and verifies when their jobs end. */
export const JOB_SETTLEMENT_CONSUMER = 'billing-job-settlement';

export const JOB_END_EVENT_TYPES = ['job.completed', 'verification.completed', 'job.failed'] as const;
type JobEnd = EventOf<(typeof JOB_END_EVENT_TYPES)[number]>;

/**
 * job.completed (a sign) and verification.completed (a verify) commit the job's reservation, job.failed releases
 * it: a job that never produced its answer is never billed. Both are idempotent in the store (a repeat is a no-op), and an unknown reservation (swept,
 * or from before metering) is logged, not retried forever.
 */
export function settleJobReservation(metering: Metering, logger: Logger) {
  const settle = async (event: JobEnd, reservationId: string): Promise<void> => {
    try {
      if (event.type === 'job.completed' || event.type === 'verification.completed')
        await metering.commit(event.tenant_id, reservationId);
      else await metering.release(event.tenant_id, reservationId);
    } catch (error) {
      if (isCairnError(error) && error.code === 'cairn.not_found') {
        logger.warn(
          { reservation_id: reservationId, event_id: event.event_id },
          'job reservation not found; nothing to settle',
        );
        return;
      }
      throw error;
    }
  };
  return async (event: JobEnd): Promise<void> => {
    // A BYOK sign job holds a second reservation (byok_sign), settled with the first.
    const byok = event.type === 'verification.completed' ? undefined : event.data.byok_reservation_id;
    for (const id of [event.data.reservation_id, byok]) {
      if (id) await settle(event, id);
    }
  };
}
