import { and, desc, eq, sql } from 'drizzle-orm';
import type { AnyEvent } from '@cairn/events';
import type { Tx } from '@cairn/db';
import { newId } from '@cairn/ids';
import { checkpoints, entries } from './db/schema.js';
import { entryHash, GENESIS_HASH } from './domain/chain.js';
import { isAudited } from './domain/policy.js';

/** Durable consumer name of the audit log (one per purpose, stable across deploys). */
export const AUDIT_LOG_CONSUMER = 'audit-log';

/**
 * Appends one audit entry per audited event to its tenant's hash chain. Runs inside the idempotent consumer's
 * transaction (tenant set, event id claimed), so a redelivered event writes nothing twice. Appends of one
 * tenant are serialized by a transaction-scoped advisory lock on the tenant, so two events never take the
 * same seq or chain off the same predecessor.
 */
export async function recordEvent(event: AnyEvent, tx: Tx): Promise<void> {
  if (!isAudited(event)) return;
  await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${event.tenant_id}))`);
  const [already] = await tx
    .select({ id: entries.entryId })
    .from(entries)
    .where(and(eq(entries.tenantId, event.tenant_id), eq(entries.eventId, event.event_id)));
  if (already) return;
  const head = await chainHead(tx, event.tenant_id);
  const fields = {
    tenantId: event.tenant_id,
    seq: head.seq + 1,
    entryId: newId('entry'),
    eventId: event.event_id,
    eventType: event.type,
    occurredAt: new Date(event.created_at),
    data: event.data,
  };
  await tx.insert(entries).values({ ...fields, prevHash: head.hash, hash: entryHash(fields, head.hash) });
}

/** The tenant's last entry (or its purge checkpoint, or genesis): where the next entry chains on. */
async function chainHead(tx: Tx, tenantId: string): Promise<{ seq: number; hash: string }> {
  const [last] = await tx
    .select({ seq: entries.seq, hash: entries.hash })
    .from(entries)
    .where(eq(entries.tenantId, tenantId))
    .orderBy(desc(entries.seq))
    .limit(1);
  if (last) return last;
  const [checkpoint] = await tx
    .select({ seq: checkpoints.seq, hash: checkpoints.hash })
    .from(checkpoints)
    .where(eq(checkpoints.tenantId, tenantId));
  return checkpoint ?? { seq: 0, hash: GENESIS_HASH };
}
