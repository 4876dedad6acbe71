import { and, asc, desc, eq, gte, lt, lte, sql } from 'drizzle-orm';
import { withTenant, type Database, type Tx } from '@cairn/db';
import type { CheckpointRow, EntryFilter, EntryInsert, EntryRow } from '../app/ports.js';
import { checkpoints, entries } from '../db/schema.js';

/** Serializes one tenant's appends (and purges) for the rest of the transaction. */
export async function lockTenantChain(tx: Tx, tenantId: string): Promise<void> {
  await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${tenantId}))`);
}

export async function hasEntryForEvent(tx: Tx, tenantId: string, eventId: string): Promise<boolean> {
  const [already] = await tx
    .select({ id: entries.entryId })
    .from(entries)
    .where(and(eq(entries.tenantId, tenantId), eq(entries.eventId, eventId)));
  return already !== undefined;
}

/** The tenant's last entry, or its purge checkpoint, or undefined (the chain starts at genesis). */
export async function chainHead(tx: Tx, tenantId: string): Promise<{ seq: number; hash: string } | undefined> {
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
  return checkpoint;
}

export async function insertEntry(tx: Tx, entry: EntryInsert): Promise<void> {
  await tx.insert(entries).values(entry);
}

/** A page of the tenant's log, newest first (`limit` rows at most). */
export async function listEntries(
  db: Database,
  tenantId: string,
  filter: EntryFilter,
  limit: number,
): Promise<EntryRow[]> {
  return withTenant(db, tenantId, (tx) =>
    tx
      .select()
      .from(entries)
      .where(
        and(
          eq(entries.tenantId, tenantId),
          filter.eventType ? eq(entries.eventType, filter.eventType) : undefined,
          filter.since ? gte(entries.occurredAt, filter.since) : undefined,
          filter.until ? lt(entries.occurredAt, filter.until) : undefined,
          filter.belowSeq !== undefined ? lt(entries.seq, filter.belowSeq) : undefined,
        ),
      )
      .orderBy(desc(entries.seq))
      .limit(limit),
  );
}

export async function checkpointOf(tx: Tx, tenantId: string): Promise<CheckpointRow | undefined> {
  const [checkpoint] = await tx.select().from(checkpoints).where(eq(checkpoints.tenantId, tenantId));
  return checkpoint;
}

/** Up to `limit` entries from chain position `fromSeq` on, in seq order. */
export async function entriesFrom(tx: Tx, tenantId: string, fromSeq: number, limit: number): Promise<EntryRow[]> {
  return tx
    .select()
    .from(entries)
    .where(and(eq(entries.tenantId, tenantId), gte(entries.seq, fromSeq)))
    .orderBy(asc(entries.seq))
    .limit(limit);
}

/** The tenant's entries recorded in [start, end), in seq order. */
export async function entriesRecordedIn(tx: Tx, tenantId: string, start: Date, end: Date): Promise<EntryRow[]> {
  return tx
    .select()
    .from(entries)
    .where(and(eq(entries.tenantId, tenantId), gte(entries.recordedAt, start), lt(entries.recordedAt, end)))
    .orderBy(asc(entries.seq));
}

/**
 * Deletes the tenant's entries recorded before `cutoff` (everything up to the newest of them: a prefix, so the
 * chain has no holes) and moves the checkpoint to the last one deleted so the surviving chain still verifies.
 */
export async function purgeRecordedBefore(
  db: Database,
  tenantId: string,
  cutoff: Date,
  now: Date,
): Promise<{ purged: number; checkpointSeq: number }> {
  return withTenant(db, tenantId, async (tx) => {
    await lockTenantChain(tx, tenantId);
    const [last] = await tx
      .select({ seq: entries.seq, hash: entries.hash })
      .from(entries)
      .where(and(eq(entries.tenantId, tenantId), lt(entries.recordedAt, cutoff)))
      .orderBy(desc(entries.seq))
      .limit(1);
    const existing = await checkpointOf(tx, tenantId);
    if (!last) return { purged: 0, checkpointSeq: existing?.seq ?? 0 };
    const deleted = await tx
      .delete(entries)
      .where(and(eq(entries.tenantId, tenantId), lte(entries.seq, last.seq)))
      .returning({ id: entries.entryId });
    await tx
      .insert(checkpoints)
      .values({ tenantId, seq: last.seq, hash: last.hash })
      .onConflictDoUpdate({ target: checkpoints.tenantId, set: { seq: last.seq, hash: last.hash, purgedAt: now } });
    return { purged: deleted.length, checkpointSeq: last.seq };
  });
}

/** The tenants that have entries (a loose index scan over entries_tenant_seq_idx), read under the narrow listing policy. */
export async function tenantsWithEntries(db: Database): Promise<string[]> {
  return db.transaction(async (tx) => {
    await tx.execute(sql`select set_config('cairn.system', 'audit-retention', true)`);
    const result = await tx.execute<{ tenant_id: string }>(sql`
      with recursive t(tenant_id) as (
        (select tenant_id from audit.entries order by tenant_id limit 1)
        union all
        select (select e.tenant_id from audit.entries e where e.tenant_id > t.tenant_id order by e.tenant_id limit 1) from t where t.tenant_id is not null
      )
      select tenant_id from t where tenant_id is not null`);
    return result.rows.map((row) => row.tenant_id);
  });
}
