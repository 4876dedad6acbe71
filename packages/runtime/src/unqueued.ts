import { WorkQueueFullError } from '@cairn/bus';
import { CairnError } from '@cairn/errors';
import type { Logger } from '@cairn/logging';

/**
 * What a caller is answered when its job could not be queued (the work queue full at NATS_STREAM_MAX_BYTES, or
 * JetStream away): 503 cairn.unavailable, after `forget` removed the job row nobody will run, so a retry with the
 * same key creates and queues the job afresh instead of finding one that never runs. The work is refused, never
 * dropped.
 */
export async function unqueued(
  what: string,
  error: unknown,
  forget: () => Promise<void>,
  logger: Logger,
): Promise<CairnError> {
  const full = error instanceof WorkQueueFullError;
  logger.error({ err: error }, full ? `${what} queue full: job refused` : `${what} job could not be queued`);
  await forget().catch((cleanup: unknown) =>
    // The job stays `queued` without an item; the caller still hears 503 and its retry answers that job.
    logger.error({ err: cleanup }, `${what} job not queued and its row not removed`),
  );
  return new CairnError(
    'cairn.unavailable',
    full
      ? `The ${what} queue is full; nothing was queued. Retry after a short wait with the same Idempotency-Key.`
      : `The ${what} job could not be queued; nothing was queued. Retry after a short wait with the same Idempotency-Key.`,
    {},
    { cause: error },
  );
}
