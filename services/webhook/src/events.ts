import type { AnyEvent } from '@cairn/events';
import type { Tx } from '@cairn/db';
import { fanOut } from './app/fan-out.js';
import type { FanOutRecords } from './app/ports.js';

/** Durable consumer name of the fan-out (one per purpose, stable across deploys). */
export const FANOUT_CONSUMER = 'webhook-fanout';
/** Every event is read; app/fan-out.ts keeps the subscribable ones. */
export const FANOUT_TYPES = 'all';

/** The fan-out consumer: deliveries for the subscribed endpoints, then a wake-up of the dispatcher. */
export function fanOutHandler(records: FanOutRecords, wake: () => void) {
  return async (event: AnyEvent, tx: Tx): Promise<void> => {
    // The wake-up runs after this transaction commits (the poll loop is the safety net if it runs early).
    if ((await fanOut(event, tx, records)) > 0) setTimeout(wake, 10).unref();
  };
}
