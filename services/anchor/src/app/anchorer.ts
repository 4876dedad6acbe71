import type { Hex } from 'viem';
import { newEvent, type AnyEvent } from '@cairn/events';
import type { Tx } from '@cairn/db';
import type { Logger } from '@cairn/logging';
import type { Backoff } from '@cairn/runtime';
import { errorText } from '../domain/calldata.js';
import { fromHex, leafHash, rootOf, toHex, treeLevels } from '@cairn/merkle';
import type { BatchRecords, BatchRow, ChainWriter } from './ports.js';

export interface AnchorerOptions {
  store: BatchRecords;
  chain: ChainWriter;
  logger: Logger;
  confirmations: number;
  batchMaxAgeMs: number;
  retryMaxMs: number;
  /** The loop's interval while batches are in flight (a sent one waits on blocks). */
  pollMs: number;
  /** The loop's back-off while there is no batch at all (enqueues wake it). */
  idle: Backoff;
  enqueueEvent: (tx: Tx, event: AnyEvent) => Promise<void>;
  /** Called after a batch is anchored (the outbox relay is flushed then). */
  onAnchored?: (batchId: string) => void;
}

/**
 * One pass of the anchoring loop: close aged batches, fix their roots, then (holding the sender lock) watch the
 * batches on chain and send the closed ones. Every step is recorded before the next, so a crash or an RPC outage
 * resumes where it stopped: a closed batch waits (backoff) until the node answers, a sent one is re-broadcast
 * from its stored signed bytes if the node lost it, and re-signed with a fresh nonce if its nonce was spent
 * elsewhere or can no longer be mined (the chain was reset).
 */
export class Anchorer {
  constructor(private readonly o: AnchorerOptions) {}

  /**
   * A tick when a batch is due, then how long the loop may sleep: until the open batch is due to close, `pollMs`
   * while a batch is closed or sent (until its retry time when it waits on one), and the idle back-off when there is
   * no batch.
   */
  async pass(): Promise<number> {
    // One statement when nothing is due (no batch, or an open one still filling): the tick's statements and its
    // sender lock only when a batch is to close, seal, send or watch now.
    const ahead = await this.o.store.outlook(this.o.batchMaxAgeMs);
    if (ahead.openClosesInMs !== 0 && ahead.dueInMs !== 0) return this.sleepFor(ahead);
    await this.tick();
    return this.sleepFor(await this.o.store.outlook(this.o.batchMaxAgeMs));
  }

  private sleepFor({ openClosesInMs, dueInMs }: { openClosesInMs: number | null; dueInMs: number | null }): number {
    if (openClosesInMs === null && dueInMs === null) return this.o.idle.next(false);
    this.o.idle.reset();
    // At least a few ms: a batch that is due as the outlook is read must not make the loop spin.
    return Math.max(
      20,
      Math.min(openClosesInMs ?? Infinity, dueInMs === null ? Infinity : Math.max(this.o.pollMs, dueInMs)),
    );
  }

  async tick(): Promise<void> {
    await this.o.store.closeAged(this.o.batchMaxAgeMs);
    await this.seal();
    await this.o.store.withSenderLock(async () => {
      await this.watch();
      await this.send();
    });
  }

  /** Fixes the Merkle root of every closed batch that has none yet. */
  async seal(): Promise<number> {
    const closed = await this.o.store.closedWithoutRoot();
    for (const batch of closed) {
      const rows = await this.o.store.leavesOf(batch.batchId);
      if (rows.length !== batch.size || rows.some((r, i) => r.leafIndex !== i))
        throw new Error(`batch ${batch.batchId}: ${rows.length} leaves for size ${batch.size}`);
      const root = rootOf(treeLevels(rows.map((r) => leafHash(fromHex(r.manifestDigest, 32)))));
      await this.o.store.setRoot(batch.batchId, toHex(root));
    }
    return closed.length;
  }

  /**
   * Marks a batch anchored and, in the same transaction, writes one anchor.confirmed per tenant in it (with that
   * tenant's manifest count and meter anchor_batch, quantity 1: a tenant is billed once per batch).
   */
  private async markAnchored(batch: BatchRow, blockNumber: number, confirmations: number): Promise<void> {
    await this.o.store.markAnchored(batch.batchId, blockNumber, confirmations, async (tx, shares, confirmedAt) => {
      for (const { tenantId, manifests } of shares) {
        await this.o.enqueueEvent(
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

  private async failed(batch: BatchRow, error: unknown): Promise<void> {
    const attempts = batch.attempts + 1;
    const delay = Math.min(this.o.retryMaxMs, 500 * 2 ** Math.min(attempts - 1, 16));
    await this.o.store.recordFailure(
      batch.batchId,
      attempts,
      errorText(error).slice(0, 500),
      new Date(Date.now() + delay),
    );
    this.o.logger.warn(
      { batch_id: batch.batchId, attempts, retry_in_ms: delay, err: error },
      'anchor: chain unreachable; will retry',
    );
  }

  /** Sent batches: confirm, re-broadcast, or hand back for re-signing. */
  private async watch(): Promise<void> {
    const pending = await this.o.store.duePending();
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
            await this.markAnchored(batch, receipt.blockNumber, seen);
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
            await this.o.store.recordMined(batch.batchId, receipt.blockNumber, seen);
          }
          continue;
        }
        const nonce = batch.txNonce ?? -1;
        // Reverted (cannot happen for a plain self-transfer), nonce spent by another transaction, or a nonce the
        // chain cannot reach (a gap, e.g. after the node was reset): sign again with a fresh nonce.
        const stale = (receipt && !receipt.success) || nonce < latest || (nonce > latest && !inFlight.has(latest));
        if (stale) {
          inFlight.delete(batch.txNonce);
          await this.o.store.returnToClosed(batch.batchId);
          this.o.logger.warn(
            { batch_id: batch.batchId, tx_hash: hash, nonce, chain_nonce: latest },
            'anchor: transaction cannot be mined as signed; re-signing',
          );
          continue;
        }
        if (!(await this.o.chain.known(hash))) {
          // Dropped from the node's mempool (restart, eviction): the same signed bytes again.
          await this.o.chain.broadcast(batch.rawTx as Hex);
          await this.o.store.recordRebroadcast(batch.batchId);
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
    const ready = await this.o.store.dueClosed();
    for (const batch of ready) {
      try {
        const { pending } = await this.o.chain.nonces();
        const ours = await this.o.store.maxPendingNonce(this.o.chain.address);
        const nonce = Math.max(pending, ours === null ? 0 : ours + 1);
        const signed = await this.o.chain.sign(batch.merkleRoot as Hex, nonce);
        // Recorded before the node sees it: whatever happens next, the watcher knows what to look for.
        await this.o.store.recordSent(batch.batchId, {
          chainId: signed.chainId,
          fromAddress: this.o.chain.address,
          txHash: signed.hash,
          txNonce: nonce,
          rawTx: signed.raw,
        });
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
