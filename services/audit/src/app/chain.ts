import type { AnyEvent } from '@cairn/events';
import { withTenant, type Database, type Tx } from '@cairn/db';
import { newId } from '@cairn/ids';
import { entryHash, GENESIS_HASH } from '../domain/chain.js';
import { isAudited } from '../domain/policy.js';
import type { ChainEntries } from './ports.js';

const VERIFY_BATCH = 1000;

/**
 * Appends one audit entry per audited event to its tenant's hash chain. Runs inside the idempotent consumer's
 * transaction (tenant set, event id claimed), so a redelivered event writes nothing twice. Appends of one
 * tenant are serialized by a transaction-scoped advisory lock on the tenant, so two events never take the
 * same seq or chain off the same predecessor.
 */
export async function recordEvent(entries: ChainEntries, event: AnyEvent, tx: Tx): Promise<void> {
  if (!isAudited(event)) return;
  await entries.lockTenantChain(tx, event.tenant_id);
  if (await entries.hasEntryForEvent(tx, event.tenant_id, event.event_id)) return;
  // Where the next entry chains on: the last entry, the purge checkpoint, or genesis.
  const head = (await entries.chainHead(tx, event.tenant_id)) ?? { seq: 0, hash: GENESIS_HASH };
  const fields = {
    tenantId: event.tenant_id,
    seq: head.seq + 1,
    entryId: newId('entry'),
    eventId: event.event_id,
    eventType: event.type,
    occurredAt: new Date(event.created_at),
    data: event.data,
  };
  await entries.insertEntry(tx, { ...fields, prevHash: head.hash, hash: entryHash(fields, head.hash) });
}

export type ChainVerdict =
  | { intact: true; entriesChecked: number; headHash: string; checkpointSeq: number }
  | {
      intact: false;
      entriesChecked: number;
      firstBroken: { entryId: string; seq: number; reason: string };
      checkpointSeq: number;
    };

/**
 * Walks a tenant's chain from its start (genesis or the retention checkpoint) in seq order and recomputes
 * every hash: an edited entry fails its own hash, a deleted one leaves a seq gap / a prev_hash mismatch.
 */
export async function verifyChain(entries: ChainEntries, db: Database, tenantId: string): Promise<ChainVerdict> {
  return withTenant(db, tenantId, async (tx) => {
    const checkpoint = await entries.checkpointOf(tx, tenantId);
    let expectedSeq = (checkpoint?.seq ?? 0) + 1;
    let prevHash = checkpoint?.hash ?? GENESIS_HASH;
    const checkpointSeq = checkpoint?.seq ?? 0;
    let checked = 0;
    for (;;) {
      const batch = await entries.entriesFrom(tx, tenantId, expectedSeq, VERIFY_BATCH);
      for (const row of batch) {
        const broken = (reason: string): ChainVerdict => ({
          intact: false,
          entriesChecked: checked,
          firstBroken: { entryId: row.entryId, seq: row.seq, reason },
          checkpointSeq,
        });
        if (row.seq !== expectedSeq) return broken(`entries ${expectedSeq}..${row.seq - 1} are missing (deleted)`);
        if (row.prevHash !== prevHash) return broken('prev_hash does not match the previous entry');
        if (entryHash(row, row.prevHash) !== row.hash)
          return broken('the entry was modified after it was recorded (hash mismatch)');
        prevHash = row.hash;
        expectedSeq++;
        checked++;
      }
      if (batch.length < VERIFY_BATCH) break;
    }
    return { intact: true, entriesChecked: checked, headHash: prevHash, checkpointSeq };
  });
}
