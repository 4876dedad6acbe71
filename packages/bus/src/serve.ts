import type { ConsumerMessages, JsMsg } from '@nats-io/jetstream';
import type { Logger } from '@cairn/logging';

export interface RunningConsumer {
  /**
   * Stops taking messages. The message being handled may finish (and is acknowledged) within `graceMs`; past
   * that it is abandoned and handed back (nak), with an error log naming it, so JetStream redelivers it at once
   * rather than after the consumer's ack wait (two minutes for a sign job). Messages already fetched but not
   * started are handed back at once.
   */
  stop(graceMs?: number): Promise<void>;
}

/** How long a stopping consumer lets its message in flight finish: SHUTDOWN_GRACE_MS's default. */
export const DEFAULT_STOP_GRACE_MS = 10_000;

export interface ServeOptions {
  /** Names the consumer in logs: `{ durable }` or `{ durable, stream }`. */
  label: Record<string, string>;
  logger?: Logger;
  /**
   * Handles one message, including its acknowledgement; never throws (failures are nak'd inside). `abandoned`
   * aborts when a stop gives up waiting for it: the message is handed back already, so nothing may then keep
   * its lease alive or settle it again.
   */
  handle: (msg: JsMsg, abandoned: AbortSignal) => Promise<void>;
  /** What an abandoned message's log line says about it (event id, type). */
  describe?: (msg: JsMsg) => Record<string, unknown>;
}

/**
 * Runs a pull consumer's messages one at a time, with a stop that is bounded.
 *
 * Why not `messages.close()` and await the loop: @nats-io/jetstream queues its stop behind every message already
 * fetched (up to the pull batch), so closing meant handling and confirming each of them first. With NATS away or
 * just restarted every confirmation waits for its 5 s timeout, and a handler stuck on a dependency waits forever:
 * a service's shutdown did not finish (docs/decisions/0018-bounded-shutdown.md, test/dependency-restarts.test.ts).
 */
export function serve(messages: ConsumerMessages, options: ServeOptions): RunningConsumer {
  let stopping = false;
  let current: JsMsg | undefined;
  const abandon = new AbortController();
  const loop = (async () => {
    for await (const msg of messages) {
      if (stopping) {
        // Fetched before the stop, never started: another replica (or this service restarted) takes it now.
        handBack(msg, options);
        continue;
      }
      current = msg;
      try {
        await options.handle(msg, abandon.signal);
      } finally {
        current = undefined;
      }
    }
  })().catch((error: unknown) =>
    // The iterator itself failed (the consumer deleted, a permission revoked): nothing more arrives.
    options.logger?.error({ err: error, ...options.label }, 'consumer ended with an error'),
  );
  let stopped: Promise<void> | undefined;
  return {
    stop: (graceMs = DEFAULT_STOP_GRACE_MS) =>
      (stopped ??= (async () => {
        stopping = true;
        // Unsubscribes at once; the iterator ends after the buffered messages, each handed back above.
        const ended = Promise.all([messages.close(), loop]).then(() => 'ended' as const);
        let timer: NodeJS.Timeout | undefined;
        const late = new Promise<'late'>((resolve) => (timer = setTimeout(() => resolve('late'), graceMs)));
        const outcome = await Promise.race([ended, late]);
        clearTimeout(timer);
        if (outcome === 'late') {
          const msg = current;
          options.logger?.error(
            {
              ...options.label,
              grace_ms: graceMs,
              ...(msg ? { stream_seq: msg.seq, deliveries: msg.info.deliveryCount, ...options.describe?.(msg) } : {}),
            },
            'consumer stopped with a message still being handled; handed back, JetStream redelivers it',
          );
          // The handler may still run on; this stop no longer waits for it. What it would still write is the
          // service's to fence (the runtime cuts its database sessions); redelivery is deduplicated.
          if (msg) handBack(msg, options);
          abandon.abort();
        }
      })()),
  };
}

/** Gives a message back for redelivery now; never throws. */
export function handBack(msg: JsMsg, options: Pick<ServeOptions, 'label' | 'logger'>, delayMs?: number): void {
  try {
    msg.nak(delayMs);
  } catch (error) {
    // The connection is closed: the message is redelivered after the ack wait all the same.
    options.logger?.debug({ err: error, ...options.label, stream_seq: msg.seq }, 'could not hand a message back');
  }
}

/** A failed message's redelivery delay: `baseMs` doubling per attempt up to 2^`maxDoublings`, at most 30 s. */
export function backoffMs(baseMs: number, maxDoublings: number, attempt: number): number {
  return Math.min(30_000, baseMs * 2 ** Math.min(attempt, maxDoublings));
}
