import type { EventEnvelope } from '@cairn/bus';
import { isCairnError } from '@cairn/errors';
import type { Logger } from '@cairn/logging';
import type { MeteringStore } from './store/metering.js';

/** Durable consumer settling the reservations of asynchronous signs when their jobs end. */
export const JOB_SETTLEMENT_CONSUMER = 'billing-job-settlement';

/**
 * job.completed commits the job's reservation, job.failed releases it: a sign that never produced an asset is
 * never billed. Both are idempotent in the store (a repeat is a no-op), and an unknown reservation (swept,
 * or from before metering) is logged, not retried forever.
 */
export function settleJobReservation(store: MeteringStore, logger: Logger) {
  return async (event: EventEnvelope): Promise<void> => {
    const reservationId = event.data.reservation_id;
    if (typeof reservationId !== 'string' || reservationId === '') return;
    try {
      if (event.type === 'job.completed') await store.commit(event.tenant_id, reservationId);
      else await store.release(event.tenant_id, reservationId);
    } catch (error) {
      if (isCairnError(error) && error.code === 'cairn.not_found') {
        logger.warn({ reservation_id: reservationId, event_id: event.event_id }, 'job reservation not found; nothing to settle');
        return;
      }
      throw error;
    }
  };
}
