import type { AnyEvent } from '@cairn/events';
import type { Tx } from '@cairn/db';
import { fanOut } from './app/fan-out.js';
import { WEBHOOK_EVENTS } from './domain/events.js';
import type { FanOutRecords } from './app/ports.js';

/** Durable consumer name of the fan-out (one per purpose, stable across deploys). */
export const FANOUT_CONSUMER = 'webhook-fanout';
/**
 * The subscribable events only: the bus acknowledges every other type unread, so an event no endpoint can
 * subscribe to (asset.signed, asset.verified, …) costs the fan-out no transaction.
 */
export const FANOUT_TYPES = WEBHOOK_EVENTS;

/** The fan-out consumer: deliveries for the subscribed endpoints, then a wake-up of the dispatcher. */
export function fanOutHandler(records: FanOutRecords, wake: () => void) {
  return async (event: AnyEvent, tx: Tx): Promise<void> => {
    // The wake-up runs after this transaction commits (the poll loop is the safety net if it runs early).
    if ((await fanOut(event, tx, records)) > 0) setTimeout(wake, 10).unref();
  };
}
