import { and, asc, eq, isNull, sql } from 'drizzle-orm';
import { newEvent, type AnyEvent } from '@cairn/events';
import { withRlsSettings, withTenant, type Database, type Tx } from '@cairn/db';
import { CairnError } from '@cairn/errors';
import { newId } from '@cairn/ids';
import { batches, leaves } from '../db/schema.js';
import { auditPath, fromHex, leafHash, rootOf, toHex, treeLevels } from './merkle.js';

export type BatchRow = typeof batches.$inferSelect;
export type LeafRow = typeof leaves.$inferSelect;

/** What a caller sees: open and closed batches are both still "queued" for the chain. */
export type PublicStatus = 'queued' | 'pending' | 'anchored';
export const publicStatus = (status: BatchRow['status']): PublicStatus =>
  status === 'open' || status === 'closed' ? 'queued' : status;

/** Reads every leaf of a batch (all tenants): the batcher's system setting, select-only by policy. */
export async function asBatcher<T>(db: Database, fn: (tx: Tx) => Promise<T>): Promise<T> {
  return withRlsSettings(db, {}, async (tx) => {
    await tx.execute(sql`select set_config('cairn.system', 'anchor-batcher', true)`);
    return fn(tx);
  });
}

export interface EnqueueInput {
  tenantId: string;
  assetId: string;
  manifestId: string;
  manifestDigest: string;
}

/**
 * Adds a digest to the open batch (opening one when there is none) at the next leaf index, closing the batch
 * when it is full. Enqueues serialise on the open batch's row lock; a repeat (same tenant and manifest) returns
 * the batch it is already in.
 */
export async function enqueue(
  db: Database,
  input: EnqueueInput,
  batchMax: number,
): Promise<{ batchId: string; status: PublicStatus }> {
  if (!/^[0-9a-f]{64}$/.test(input.manifestDigest))
    throw new CairnError(
      'cairn.validation.invalid_body',
      'manifest_digest must be the SHA-256 of the manifest store, 64 lowercase hex characters.',
    );
  for (const [name, value] of [
    ['tenant_id', input.tenantId],
    ['asset_id', input.assetId],
    ['manifest_id', input.manifestId],
  ] as const) {
    if (!value) throw new CairnError('cairn.validation.invalid_body', `${name} is required`);
  }
  for (let attempt = 0; ; attempt++) {
    try {
      return await withTenant(db, input.tenantId, async (tx) => {
        const [existing] = await tx
          .select({ batchId: leaves.batchId, status: batches.status })
          .from(leaves)
          .innerJoin(batches, eq(batches.batchId, leaves.batchId))
          .where(and(eq(leaves.tenantId, input.tenantId), eq(leaves.manifestId, input.manifestId)));
        if (existing) return { batchId: existing.batchId, status: publicStatus(existing.status) };
        let [slot] = await tx
          .update(batches)
          .set({ size: sql`${batches.size} + 1` })
          .where(eq(batches.status, 'open'))
          .returning({ batchId: batches.batchId, size: batches.size });
        if (!slot) {
          [slot] = await tx
            .insert(batches)
            .values({ batchId: newId('batch'), status: 'open', size: 1 })
            .onConflictDoNothing()
            .returning({ batchId: batches.batchId, size: batches.size });
          // Another enqueue opened the batch first: take a slot in it.
          if (!slot) throw new RetryEnqueue();
        }
        await tx.insert(leaves).values({
          batchId: slot.batchId,
          leafIndex: slot.size - 1,
          tenantId: input.tenantId,
          assetId: input.assetId,
          manifestId: input.manifestId,
          manifestDigest: input.manifestDigest,
        });
        if (slot.size >= batchMax)
          await tx
            .update(batches)
            .set({ status: 'closed', closedAt: new Date() })
            .where(eq(batches.batchId, slot.batchId));
        return { batchId: slot.batchId, status: 'queued' as const };
      });
    } catch (error) {
      // Unique violation: a concurrent repeat of this manifest committed first; the next pass returns its batch.
      const retry =
        error instanceof RetryEnqueue ||
        (typeof error === 'object' && error !== null && 'code' in error && error.code === '23505') ||
        causeCode(error) === '23505';
      if (!retry || attempt >= 5) throw error;
    }
  }
}

class RetryEnqueue extends Error {}
function causeCode(error: unknown): unknown {
  return typeof error === 'object' &&
    error !== null &&
    'cause' in error &&
    typeof error.cause === 'object' &&
    error.cause !== null &&
    'code' in error.cause
    ? error.cause.code
    : undefined;
}

/** Closes the open batch once its first manifest is `maxAgeMs` old. */
export async function closeAged(db: Database, maxAgeMs: number): Promise<void> {
  await db
    .update(batches)
    .set({ status: 'closed', closedAt: new Date() })
    .where(
      and(eq(batches.status, 'open'), sql`${batches.openedAt} <= now() - make_interval(secs => ${maxAgeMs / 1000})`),
    );
}

async function batchLeaves(tx: Tx, batchId: string): Promise<LeafRow[]> {
  return tx.select().from(leaves).where(eq(leaves.batchId, batchId)).orderBy(asc(leaves.leafIndex));
}

/** Fixes the Merkle root of every closed batch that has none yet. */
export async function sealClosed(db: Database): Promise<number> {
  const open = await db
    .select({ batchId: batches.batchId, size: batches.size })
    .from(batches)
    .where(and(eq(batches.status, 'closed'), isNull(batches.merkleRoot)));
  for (const batch of open) {
    await asBatcher(db, async (tx) => {
      const rows = await batchLeaves(tx, batch.batchId);
      if (rows.length !== batch.size || rows.some((r, i) => r.leafIndex !== i))
        throw new Error(`batch ${batch.batchId}: ${rows.length} leaves for size ${batch.size}`);
      const root = rootOf(treeLevels(rows.map((r) => leafHash(fromHex(r.manifestDigest, 32)))));
      await tx
        .update(batches)
        .set({ merkleRoot: toHex(root) })
        .where(eq(batches.batchId, batch.batchId));
    });
  }
  return open.length;
}

/**
 * Marks a batch anchored and, in the same transaction, writes one anchor.confirmed per tenant in it (with that
 * tenant's manifest count and meter anchor_batch, quantity 1: a tenant is billed once per batch).
 */
export async function markAnchored(
  db: Database,
  batch: BatchRow,
  blockNumber: number,
  enqueueEvent: (tx: Tx, event: AnyEvent) => Promise<void>,
  confirmations = 1,
): Promise<void> {
  await asBatcher(db, async (tx) => {
    const confirmedAt = new Date();
    const updated = await tx
      .update(batches)
      .set({ status: 'anchored', blockNumber, confirmations, confirmedAt, lastError: null })
      .where(and(eq(batches.batchId, batch.batchId), eq(batches.status, 'pending')))
      .returning({ batchId: batches.batchId });
    if (updated.length === 0) return;
    const counts = await tx
      .select({ tenantId: leaves.tenantId, manifests: sql<number>`count(*)::int` })
      .from(leaves)
      .where(eq(leaves.batchId, batch.batchId))
      .groupBy(leaves.tenantId);
    for (const { tenantId, manifests } of counts) {
      await enqueueEvent(
        tx,
        newEvent('anchor.confirmed', tenantId, {
          batch_id: batch.batchId,
          merkle_root: batch.merkleRoot,
          size: batch.size,
          chain_id: batch.chainId,
          tx_hash: batch.txHash,
          block_number: blockNumber,
          confirmed_at: confirmedAt.toISOString(),
          manifests,
          'billing.meter': 'anchor_batch',
          'billing.quantity': 1,
        }),
      );
    }
  });
}

export async function getBatch(db: Database, batchId: string): Promise<BatchRow | undefined> {
  const [row] = await db.select().from(batches).where(eq(batches.batchId, batchId));
  return row;
}

export interface Proof {
  batch: BatchRow;
  leaf: LeafRow;
  leafHash: string;
  auditPath: string[];
}

/**
 * The inclusion proof of a tenant's asset: the leaf is looked up as that tenant (another tenant's asset is
 * simply not found), then the tree is rebuilt from the batch's digests (only hashes leave this function).
 */
export async function getProof(db: Database, tenantId: string, batchId: string, assetId: string): Promise<Proof> {
  const leaf = await withTenant(db, tenantId, async (tx) => {
    const [row] = await tx
      .select()
      .from(leaves)
      .where(and(eq(leaves.batchId, batchId), eq(leaves.tenantId, tenantId), eq(leaves.assetId, assetId)))
      .orderBy(asc(leaves.leafIndex))
      .limit(1);
    return row;
  });
  if (!leaf) throw new CairnError('cairn.not_found', `Asset ${assetId} is not in batch ${batchId}.`);
  const batch = await getBatch(db, batchId);
  if (!batch) throw new CairnError('cairn.not_found', `Batch ${batchId} does not exist.`);
  if (!batch.merkleRoot)
    throw new CairnError(
      'cairn.not_found',
      `Batch ${batchId} is still open: its proofs exist once it closes (within seconds).`,
    );
  const digests = await asBatcher(db, (tx) =>
    tx
      .select({ d: leaves.manifestDigest })
      .from(leaves)
      .where(eq(leaves.batchId, batchId))
      .orderBy(asc(leaves.leafIndex)),
  );
  const levels = treeLevels(digests.map((r) => leafHash(fromHex(r.d, 32))));
  return {
    batch,
    leaf,
    leafHash: toHex(levels[0]![leaf.leafIndex]!),
    auditPath: auditPath(levels, leaf.leafIndex).map(toHex),
  };
}

/** Whether `tenantId` has a manifest in the batch (so the batch is theirs to look at). */
export async function tenantHasLeafIn(db: Database, tenantId: string, batchId: string): Promise<boolean> {
  return withTenant(
    db,
    tenantId,
    async (tx) =>
      (
        await tx
          .select({ i: leaves.leafIndex })
          .from(leaves)
          .where(and(eq(leaves.batchId, batchId), eq(leaves.tenantId, tenantId)))
          .limit(1)
      ).length > 0,
  );
}
