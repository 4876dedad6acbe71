import { and, asc, eq, inArray, isNotNull, isNull, lte, or, sql } from 'drizzle-orm';
import type pg from 'pg';
import type { Hex } from 'viem';
import type { AnyEvent } from '@cairn/events';
import type { Database, Tx } from '@cairn/db';
import type { Logger } from '@cairn/logging';
import { batches } from '../db/schema.js';
import { closeAged, markAnchored, sealClosed, type BatchRow } from './batches.js';
import { errorText, type ChainWriter } from './chain.js';

export interface AnchorerOptions {
  db: Database;
  pool: pg.Pool;
  chain: ChainWriter;
  logger: Logger;
  confirmations: number;
  batchMaxAgeMs: number;
  retryMaxMs: number;
  enqueueEvent: (tx: Tx, event: AnyEvent) => Promise<void>;
  /** Called after a batch is anchored (the outbox relay is flushed then). */
  onAnchored?: (batchId: string) => void;
}

/** One key for the whole fleet: only one anchor replica sends at a time, so nonces never collide. */
const SENDER_LOCK = 0x616e6368; // "anch"

/**
 * One pass of the anchoring loop: close aged batches, fix their roots, then (holding the sender lock) watch the
 * batches on chain and send the closed ones. Every step is recorded before the next, so a crash or an RPC outage
 * resumes where it stopped: a closed batch waits (backoff) until the node answers, a sent one is re-broadcast
 * from its stored signed bytes if the node lost it, and re-signed with a fresh nonce if its nonce was spent
 * elsewhere or can no longer be mined (the chain was reset).
 */
export class Anchorer {
  constructor(private readonly o: AnchorerOptions) {}

  async tick(): Promise<void> {
    await closeAged(this.o.db, this.o.batchMaxAgeMs);
    await sealClosed(this.o.db);
    const client = await this.o.pool.connect();
    try {
      const { rows } = await client.query<{ locked: boolean }>('select pg_try_advisory_lock($1) as locked', [
        SENDER_LOCK,
      ]);
      if (!rows[0]?.locked) return;
      try {
        await this.watch();
        await this.send();
      } finally {
        await client.query('select pg_advisory_unlock($1)', [SENDER_LOCK]);
      }
    } finally {
      client.release();
    }
  }

  private async failed(batch: BatchRow, error: unknown): Promise<void> {
    const attempts = batch.attempts + 1;
    const delay = Math.min(this.o.retryMaxMs, 500 * 2 ** Math.min(attempts - 1, 16));
    await this.o.db
      .update(batches)
      .set({ attempts, lastError: errorText(error).slice(0, 500), nextAttemptAt: new Date(Date.now() + delay) })
      .where(eq(batches.batchId, batch.batchId));
    this.o.logger.warn(
      { batch_id: batch.batchId, attempts, retry_in_ms: delay, err: error },
      'anchor: chain unreachable; will retry',
    );
  }

  private due() {
    return or(isNull(batches.nextAttemptAt), lte(batches.nextAttemptAt, new Date()));
  }

  /** Sent batches: confirm, re-broadcast, or hand back for re-signing. */
  private async watch(): Promise<void> {
    const pending = await this.o.db
      .select()
      .from(batches)
      .where(and(eq(batches.status, 'pending'), this.due()))
      .orderBy(asc(batches.txNonce));
    if (pending.length === 0) return;
    let head: number;
    let latest: number;
    try {
      [head, { latest }] = await Promise.all([this.o.chain.head(), this.o.chain.nonces()]);
    } catch (error) {
      for (const batch of pending) await this.failed(batch, error);
      return;
    }
    const inFlight = new Set(pending.map((b) => b.txNonce));
    for (const batch of pending) {
      const hash = batch.txHash as Hex;
      try {
        const receipt = await this.o.chain.receipt(hash);
        if (receipt && receipt.success) {
          const seen = Math.max(0, head - receipt.blockNumber + 1);
          if (seen >= this.o.confirmations) {
            await markAnchored(this.o.db, batch, receipt.blockNumber, this.o.enqueueEvent, seen);
            this.o.logger.info(
              {
                batch_id: batch.batchId,
                tx_hash: hash,
                block_number: receipt.blockNumber,
                confirmations: seen,
                size: batch.size,
              },
              'anchor: batch anchored',
            );
            this.o.onAnchored?.(batch.batchId);
          } else if (batch.blockNumber !== receipt.blockNumber || batch.confirmations !== seen) {
            // Mined, not yet deep enough: recorded so the wait is visible (and a reorg that moves it is followed).
            await this.o.db
              .update(batches)
              .set({ blockNumber: receipt.blockNumber, confirmations: seen })
              .where(eq(batches.batchId, batch.batchId));
          }
          continue;
        }
        const nonce = batch.txNonce ?? -1;
        // Reverted (cannot happen for a plain self-transfer), nonce spent by another transaction, or a nonce the
        // chain cannot reach (a gap, e.g. after the node was reset): sign again with a fresh nonce.
        const stale = (receipt && !receipt.success) || nonce < latest || (nonce > latest && !inFlight.has(latest));
        if (stale) {
          inFlight.delete(batch.txNonce);
          await this.o.db
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
            .where(and(eq(batches.batchId, batch.batchId), eq(batches.status, 'pending')));
          this.o.logger.warn(
            { batch_id: batch.batchId, tx_hash: hash, nonce, chain_nonce: latest },
            'anchor: transaction cannot be mined as signed; re-signing',
          );
          continue;
        }
        if (!(await this.o.chain.known(hash))) {
          // Dropped from the node's mempool (restart, eviction): the same signed bytes again.
          await this.o.chain.broadcast(batch.rawTx as Hex);
          await this.o.db
            .update(batches)
            .set({ broadcasts: sql`${batches.broadcasts} + 1`, lastError: null })
            .where(eq(batches.batchId, batch.batchId));
          this.o.logger.warn(
            { batch_id: batch.batchId, tx_hash: hash },
            'anchor: transaction was dropped; re-broadcast',
          );
        }
      } catch (error) {
        await this.failed(batch, error);
      }
    }
  }

  /** Closed batches with a root: sign (nonce after every in-flight one), record, broadcast. */
  private async send(): Promise<void> {
    const ready = await this.o.db
      .select()
      .from(batches)
      .where(and(eq(batches.status, 'closed'), isNotNull(batches.merkleRoot), this.due()))
      .orderBy(asc(batches.closedAt));
    for (const batch of ready) {
      try {
        const { pending } = await this.o.chain.nonces();
        const [ours] = await this.o.db
          .select({ max: sql<number | null>`max(${batches.txNonce})` })
          .from(batches)
          .where(and(inArray(batches.status, ['pending']), eq(batches.fromAddress, this.o.chain.address)));
        const nonce = Math.max(pending, ours?.max === null || ours?.max === undefined ? 0 : Number(ours.max) + 1);
        const signed = await this.o.chain.sign(batch.merkleRoot as Hex, nonce);
        // Recorded before the node sees it: whatever happens next, the watcher knows what to look for.
        await this.o.db
          .update(batches)
          .set({
            status: 'pending',
            chainId: signed.chainId,
            fromAddress: this.o.chain.address,
            txHash: signed.hash,
            txNonce: nonce,
            rawTx: signed.raw,
            sentAt: new Date(),
            broadcasts: 1,
            attempts: 0,
            nextAttemptAt: null,
            lastError: null,
          })
          .where(and(eq(batches.batchId, batch.batchId), eq(batches.status, 'closed')));
        try {
          await this.o.chain.broadcast(signed.raw);
        } catch (error) {
          // Stays pending: the watcher re-broadcasts (or re-signs) once the node answers.
          await this.failed({ ...batch, attempts: 0 }, error);
          continue;
        }
        this.o.logger.info(
          { batch_id: batch.batchId, tx_hash: signed.hash, nonce, size: batch.size },
          'anchor: batch sent',
        );
      } catch (error) {
        await this.failed(batch, error);
      }
    }
  }
}
