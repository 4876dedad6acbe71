import type { EventEnvelope } from './envelope.js';

/**
 * Where a consumer remembers which events it applied. `once` runs `apply` and records the id atomically
 * (one database transaction), or skips `apply` when the id is already recorded.
 */
export interface DedupeStore<TTx> {
  once(consumer: string, event: EventEnvelope, apply: (tx: TTx) => Promise<void>): Promise<'applied' | 'duplicate'>;
}

/** Wraps a handler so redelivered or republished events (same event_id) take effect exactly once. */
export function idempotentHandler<TTx>(
  store: DedupeStore<TTx>,
  consumer: string,
  apply: (event: EventEnvelope, tx: TTx) => Promise<void>,
): (event: EventEnvelope) => Promise<void> {
  return async (event) => {
    await store.once(consumer, event, (tx) => apply(event, tx));
  };
}
