import type { AnyEvent } from '@cairn/events';

/**
 * Where a consumer remembers which events it applied. `once` runs `apply` and records the id atomically
 * (one database transaction), or skips `apply` when the id is already recorded.
 */
export interface DedupeStore<TTx> {
  once(consumer: string, event: AnyEvent, apply: (tx: TTx) => Promise<void>): Promise<'applied' | 'duplicate'>;
}

/** Wraps a handler so redelivered or republished events (same event_id) take effect exactly once. */
export function idempotentHandler<TTx, E extends AnyEvent>(
  store: DedupeStore<TTx>,
  consumer: string,
  apply: (event: E, tx: TTx) => Promise<void>,
): (event: E) => Promise<void> {
  return async (event) => {
    await store.once(consumer, event, (tx) => apply(event, tx));
  };
}
