import { and, asc, eq, inArray, isNotNull, isNull, lte, or, sql } from 'drizzle-orm';
import type pg from 'pg';
import { withRlsSettings, withTenant, type Database, type Tx } from '@cairn/db';
import { newId } from '@cairn/ids';
import type { BatchRecords, BatchRow, EnqueueInput, LeafRow, TenantShare } from '../app/ports.js';
import { batches, leaves } from '../db/schema.js';
import { publicStatus, type PublicStatus } from '../domain/status.js';

/** One key for the whole fleet: only one anchor replica sends at a time, so nonces never collide. */
const SENDER_LOCK = 0x616e6368; // "anch"

/** Reads every leaf of a batch (all tenants): the batcher's system setting, select-only by policy. */
async function asBatcher<T>(db: Database, fn: (tx: Tx) => Promise<T>): Promise<T> {
  return withRlsSettings(db, {}, async (tx) => {
    await tx.execute(sql`select set_config('cairn.system', 'anchor-batcher', true)`);
    return fn(tx);
  });
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

const due = () => or(isNull(batches.nextAttemptAt), lte(batches.nextAttemptAt, new Date()));

/** anchor.batches and anchor.leaves: every statement of the anchor service. */
export class BatchStore implements BatchRecords {
  constructor(
    private readonly db: Database,
    private readonly pool: pg.Pool,
  ) {}

  /**
   * Adds a digest to the open batch (opening one when there is none) at the next leaf index, closing the batch
   * when it is full. Enqueues serialise on the open batch's row lock; a repeat (same tenant and manifest) returns
   * the batch it is already in. `filled`: this enqueue closed the batch (it is ready to be sealed and sent).
   */
  async enqueue(
    input: EnqueueInput,
    batchMax: number,
  ): Promise<{ batchId: string; status: PublicStatus; filled: boolean }> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await withTenant(this.db, input.tenantId, async (tx) => {
          const [existing] = await tx
            .select({ batchId: leaves.batchId, status: batches.status })
            .from(leaves)
            .innerJoin(batches, eq(batches.batchId, leaves.batchId))
            .where(and(eq(leaves.tenantId, input.tenantId), eq(leaves.manifestId, input.manifestId)));
          if (existing) return { batchId: existing.batchId, status: publicStatus(existing.status), filled: false };
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
          const filled = slot.size >= batchMax;
          if (filled)
            await tx
              .update(batches)
              .set({ status: 'closed', closedAt: new Date() })
              .where(eq(batches.batchId, slot.batchId));
          return { batchId: slot.batchId, status: 'queued' as const, filled };
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

  /** Closes the open batch once its first manifest is `maxAgeMs` old. */
  async closeAged(maxAgeMs: number): Promise<void> {
    await this.db
      .update(batches)
      .set({ status: 'closed', closedAt: new Date() })
      .where(
        and(eq(batches.status, 'open'), sql`${batches.openedAt} <= now() - make_interval(secs => ${maxAgeMs / 1000})`),
      );
  }

  /**
   * What lies ahead of the batcher, by the database's clock: milliseconds until the open batch is `maxAgeMs` old,
   * and until the earliest closed or pending batch is due (0 when one is due now); null when there is none.
   */
  async outlook(maxAgeMs: number): Promise<{ openClosesInMs: number | null; dueInMs: number | null }> {
    const [row] = await this.db
      .select({
        openClosesInMs: sql<
          number | null
        >`(extract(epoch from (min(${batches.openedAt}) filter (where ${batches.status} = 'open')) - now()) * 1000 + ${maxAgeMs})::float8`,
        dueInMs: sql<
          number | null
        >`(extract(epoch from (min(greatest(coalesce(${batches.nextAttemptAt}, now()), now())) filter (where ${batches.status} in ('closed', 'pending'))) - now()) * 1000)::float8`,
      })
      .from(batches)
      .where(inArray(batches.status, ['open', 'closed', 'pending']));
    const ms = (value: number | string | null | undefined) =>
      value === null || value === undefined ? null : Math.max(0, Number(value));
    return { openClosesInMs: ms(row?.openClosesInMs), dueInMs: ms(row?.dueInMs) };
  }

  /** Closed batches whose Merkle root is not fixed yet. */
  async closedWithoutRoot(): Promise<{ batchId: string; size: number }[]> {
    return this.db
      .select({ batchId: batches.batchId, size: batches.size })
      .from(batches)
      .where(and(eq(batches.status, 'closed'), isNull(batches.merkleRoot)));
  }

  /** Every leaf of a batch, all tenants, in leaf order (only the batcher reads them). */
  async leavesOf(batchId: string): Promise<{ leafIndex: number; manifestDigest: string }[]> {
    return asBatcher(this.db, (tx) =>
      tx
        .select({ leafIndex: leaves.leafIndex, manifestDigest: leaves.manifestDigest })
        .from(leaves)
        .where(eq(leaves.batchId, batchId))
        .orderBy(asc(leaves.leafIndex)),
    );
  }

  async setRoot(batchId: string, merkleRoot: string): Promise<void> {
    await this.db.update(batches).set({ merkleRoot }).where(eq(batches.batchId, batchId));
  }

  async getBatch(batchId: string): Promise<BatchRow | undefined> {
    const [row] = await this.db.select().from(batches).where(eq(batches.batchId, batchId));
    return row;
  }

  /** A tenant's leaf for an asset in a batch, looked up as that tenant (another tenant's is simply not found). */
  async tenantLeaf(tenantId: string, batchId: string, assetId: string): Promise<LeafRow | undefined> {
    return withTenant(this.db, tenantId, async (tx) => {
      const [row] = await tx
        .select()
        .from(leaves)
        .where(and(eq(leaves.batchId, batchId), eq(leaves.tenantId, tenantId), eq(leaves.assetId, assetId)))
        .orderBy(asc(leaves.leafIndex))
        .limit(1);
      return row;
    });
  }

  /** Whether `tenantId` has a manifest in the batch (so the batch is theirs to look at). */
  async tenantHasLeafIn(tenantId: string, batchId: string): Promise<boolean> {
    return withTenant(
      this.db,
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

  /**
   * The latest leaf of an asset, any tenant (an asset has one manifest, hence one leaf, in practice), in one
   * statement: anchor.latest_leaf_of_asset (migration 0004) opens the batcher's scope for itself.
   */
  async latestLeafOfAsset(
    assetId: string,
  ): Promise<{ batchId: string; leafIndex: number; manifestDigest: string } | undefined> {
    const { rows } = await this.db.execute<{ batch_id: string; leaf_index: number; manifest_digest: string }>(
      sql`select batch_id, leaf_index, manifest_digest from anchor.latest_leaf_of_asset(${assetId})`,
    );
    const [leaf] = rows;
    return leaf && { batchId: leaf.batch_id, leafIndex: leaf.leaf_index, manifestDigest: leaf.manifest_digest };
  }

  /**
   * Marks a batch anchored and, in the same transaction, hands each tenant's manifest count in it to `confirmed`
   * (which writes that tenant's anchor.confirmed to the outbox). Nothing happens when the batch is not pending.
   */
  async markAnchored(
    batchId: string,
    blockNumber: number,
    confirmations: number,
    confirmed: (tx: Tx, shares: TenantShare[], confirmedAt: Date) => Promise<void>,
  ): Promise<void> {
    await asBatcher(this.db, async (tx) => {
      const confirmedAt = new Date();
      const updated = await tx
        .update(batches)
        .set({ status: 'anchored', blockNumber, confirmations, confirmedAt, lastError: null })
        .where(and(eq(batches.batchId, batchId), eq(batches.status, 'pending')))
        .returning({ batchId: batches.batchId });
      if (updated.length === 0) return;
      const shares = await tx
        .select({ tenantId: leaves.tenantId, manifests: sql<number>`count(*)::int` })
        .from(leaves)
        .where(eq(leaves.batchId, batchId))
        .groupBy(leaves.tenantId);
      await confirmed(tx, shares, confirmedAt);
    });
  }

  /** Runs `fn` holding the fleet-wide sender lock; returns false (without running it) when another replica holds it. */
  async withSenderLock(fn: () => Promise<void>): Promise<boolean> {
    const client = await this.pool.connect();
    try {
      const { rows } = await client.query<{ locked: boolean }>('select pg_try_advisory_lock($1) as locked', [
        SENDER_LOCK,
      ]);
      if (!rows[0]?.locked) return false;
      try {
        await fn();
      } finally {
        await client.query('select pg_advisory_unlock($1)', [SENDER_LOCK]);
      }
      return true;
    } finally {
      client.release();
    }
  }

  async recordFailure(batchId: string, attempts: number, lastError: string, nextAttemptAt: Date): Promise<void> {
    await this.db.update(batches).set({ attempts, lastError, nextAttemptAt }).where(eq(batches.batchId, batchId));
  }

  /** Sent batches due for a look, in nonce order. */
  async duePending(): Promise<BatchRow[]> {
    return this.db
      .select()
      .from(batches)
      .where(and(eq(batches.status, 'pending'), due()))
      .orderBy(asc(batches.txNonce));
  }

  /** Closed batches with a root, due to be sent, oldest first. */
  async dueClosed(): Promise<BatchRow[]> {
    return this.db
      .select()
      .from(batches)
      .where(and(eq(batches.status, 'closed'), isNotNull(batches.merkleRoot), due()))
      .orderBy(asc(batches.closedAt));
  }

  async recordMined(batchId: string, blockNumber: number, confirmations: number): Promise<void> {
    await this.db.update(batches).set({ blockNumber, confirmations }).where(eq(batches.batchId, batchId));
  }

  /** A pending batch back to closed, its transaction forgotten, so it is signed again. */
  async returnToClosed(batchId: string): Promise<void> {
    await this.db
      .update(batches)
      .set({
        status: 'closed',
        txHash: null,
        txNonce: null,
        rawTx: null,
        sentAt: null,
        blockNumber: null,
        confirmations: 0,
        nextAttemptAt: null,
      })
      .where(and(eq(batches.batchId, batchId), eq(batches.status, 'pending')));
  }

  async recordRebroadcast(batchId: string): Promise<void> {
    await this.db
      .update(batches)
      .set({ broadcasts: sql`${batches.broadcasts} + 1`, lastError: null })
      .where(eq(batches.batchId, batchId));
  }

  /** The highest nonce of this sender's in-flight transactions (null when none is). */
  async maxPendingNonce(fromAddress: string): Promise<number | null> {
    const [ours] = await this.db
      .select({ max: sql<number | null>`max(${batches.txNonce})` })
      .from(batches)
      .where(and(inArray(batches.status, ['pending']), eq(batches.fromAddress, fromAddress)));
    return ours?.max === null || ours?.max === undefined ? null : Number(ours.max);
  }

  /** A closed batch's signed transaction, recorded (as pending) before the node sees it. */
  async recordSent(
    batchId: string,
    sent: { chainId: number; fromAddress: string; txHash: string; txNonce: number; rawTx: string },
  ): Promise<void> {
    await this.db
      .update(batches)
      .set({
        status: 'pending',
        ...sent,
        sentAt: new Date(),
        broadcasts: 1,
        attempts: 0,
        nextAttemptAt: null,
        lastError: null,
      })
      .where(and(eq(batches.batchId, batchId), eq(batches.status, 'closed')));
  }
}
