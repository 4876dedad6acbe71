import { and, gt, inArray, isNull, sql } from 'drizzle-orm';
import { newEvent } from '@cairn/events';
import type { Database } from '@cairn/db';
import type { Logger } from '@cairn/logging';
import { every, type Outbox } from '@cairn/runtime';
import { apiKeys } from '../db/schema.js';
import { keyRecordColumns } from './tenants.js';

/** Spec: an API key's expiry notice goes out 7 days before expires_at (variant A event key.expiring). */
export const KEY_EXPIRY_NOTICE_DAYS = 7;

/**
 * Emits key.expiring once per key that expires within 7 days (and has not expired or been revoked). Runs as
 * `cairn.system = 'key-expiry'`, which opens the unrevoked keys with an expiry, of every tenant, and no others; the event and the
 * "notified" mark commit together through the outbox, so a crash neither loses nor repeats a notice.
 */
export async function sweepExpiringKeys(db: Database, outbox: Outbox, batch = 500): Promise<number> {
  const notified = await db.transaction(async (tx) => {
    await tx.execute(sql`select set_config('cairn.system', 'key-expiry', true)`);
    const due = await tx
      .select(keyRecordColumns)
      .from(apiKeys)
      .where(
        and(
          isNull(apiKeys.expiringNotifiedAt),
          gt(apiKeys.expiresAt, sql`now()`),
          sql`${apiKeys.expiresAt} <= now() + ${`${KEY_EXPIRY_NOTICE_DAYS} days`}::interval`,
        ),
      )
      .limit(batch)
      .for('update', { skipLocked: true });
    if (due.length === 0) return 0;
    await tx
      .update(apiKeys)
      .set({ expiringNotifiedAt: sql`now()` })
      .where(
        inArray(
          apiKeys.keyId,
          due.map((k) => k.keyId),
        ),
      );
    for (const key of due) {
      await outbox.enqueue(
        tx,
        newEvent('key.expiring', key.tenantId, {
          key_id: key.keyId,
          scope: key.scope,
          ...(key.description ? { description: key.description } : {}),
          expires_at: key.expiresAt!.toISOString(),
        }),
      );
    }
    return due.length;
  });
  if (notified > 0) await outbox.flush();
  return notified;
}

/** Runs the sweep every `intervalMs` (and once at start), never two at once; returns the stop function. */
export function startKeyExpirySweep(
  db: Database,
  outbox: Outbox,
  logger: Logger,
  intervalMs: number,
): () => Promise<void> {
  return every(
    intervalMs,
    async () => {
      const n = await sweepExpiringKeys(db, outbox);
      if (n > 0) logger.info({ keys: n }, 'key.expiring notices emitted');
    },
    (error: unknown) => logger.warn({ err: error }, 'key expiry sweep failed; will retry'),
  );
}
