// The ports the anchor service's use cases run over, declared here (where the use cases can see them) and
// implemented elsewhere: the batches and leaves in store/batches.ts (Postgres), the chain in adapters/chain.ts.
// service.ts builds the implementations and injects them.
import type { Tx } from '@cairn/db';
import type { Hex } from 'viem';
import type { batches, leaves } from '../db/schema.js';
import type { PublicStatus } from '../domain/status.js';

/**
 * The chain side of anchoring (adapters/chain.ts implements it over JSON-RPC). A root is written as the calldata
 * of a transaction the anchoring account sends to itself; transactions are signed here and broadcast raw, so the
 * hash is known (and stored) before the node sees it, and a transaction the node lost is broadcast again byte for
 * byte.
 */
export interface ChainWriter extends ChainReader {
  readonly address: Hex;
  /** Nonces: mined (`latest`) and including the node's mempool (`pending`). */
  nonces(): Promise<{ latest: number; pending: number }>;
  sign(root: Hex, nonce: number): Promise<{ raw: Hex; hash: Hex; chainId: number }>;
  broadcast(raw: Hex): Promise<void>;
  receipt(hash: Hex): Promise<{ blockNumber: number; success: boolean } | null>;
  known(hash: Hex): Promise<boolean>;
  head(): Promise<number>;
}

/** What the verifier's anchor check needs from the chain. */
export interface ChainReader {
  chainId(): Promise<number>;
  /** A mined transaction as the chain holds it (null when the node does not know it or it is not mined). */
  transaction(hash: Hex): Promise<ChainTransaction | null>;
}

export interface ChainTransaction {
  from: Hex;
  to: Hex | null;
  input: Hex;
  blockNumber: number;
}

export type BatchRow = typeof batches.$inferSelect;
export type LeafRow = typeof leaves.$inferSelect;

export interface EnqueueInput {
  tenantId: string;
  assetId: string;
  manifestId: string;
  manifestDigest: string;
}

/** What one tenant has in an anchored batch (one anchor.confirmed each). */
export interface TenantShare {
  tenantId: string;
  manifests: number;
}

/** anchor.batches and anchor.leaves (store/batches.ts: every statement of the anchor service). */
export interface BatchRecords {
  /**
   * Adds a digest to the open batch (opening one when there is none) at the next leaf index, closing the batch
   * when it is full. Enqueues serialise on the open batch's row lock; a repeat (same tenant and manifest) returns
   * the batch it is already in. `filled`: this enqueue closed the batch (it is ready to be sealed and sent).
   */
  enqueue(input: EnqueueInput, batchMax: number): Promise<{ batchId: string; status: PublicStatus; filled: boolean }>;
  /** Closes the open batch once its first manifest is `maxAgeMs` old. */
  closeAged(maxAgeMs: number): Promise<void>;
  /**
   * What lies ahead of the batcher, by the database's clock: milliseconds until the open batch is `maxAgeMs` old,
   * and until the earliest closed or pending batch is due (0 when one is due now); null when there is none.
   */
  outlook(maxAgeMs: number): Promise<{ openClosesInMs: number | null; dueInMs: number | null }>;
  /** Closed batches whose Merkle root is not fixed yet. */
  closedWithoutRoot(): Promise<{ batchId: string; size: number }[]>;
  /** Every leaf of a batch, all tenants, in leaf order (only the batcher reads them). */
  leavesOf(batchId: string): Promise<{ leafIndex: number; manifestDigest: string }[]>;
  setRoot(batchId: string, merkleRoot: string): Promise<void>;
  getBatch(batchId: string): Promise<BatchRow | undefined>;
  /** A tenant's leaf for an asset in a batch, looked up as that tenant (another tenant's is simply not found). */
  tenantLeaf(tenantId: string, batchId: string, assetId: string): Promise<LeafRow | undefined>;
  /** Whether `tenantId` has a manifest in the batch (so the batch is theirs to look at). */
  tenantHasLeafIn(tenantId: string, batchId: string): Promise<boolean>;
  /** The latest leaf of an asset, any tenant (an asset has one manifest, hence one leaf, in practice). */
  latestLeafOfAsset(
    assetId: string,
  ): Promise<{ batchId: string; leafIndex: number; manifestDigest: string } | undefined>;
  /**
   * Marks a batch anchored and, in the same transaction, hands each tenant's manifest count in it to `confirmed`
   * (which writes that tenant's anchor.confirmed to the outbox). Nothing happens when the batch is not pending.
   */
  markAnchored(
    batchId: string,
    blockNumber: number,
    confirmations: number,
    confirmed: (tx: Tx, shares: TenantShare[], confirmedAt: Date) => Promise<void>,
  ): Promise<void>;
  /** Runs `fn` holding the fleet-wide sender lock; returns false (without running it) when another replica holds it. */
  withSenderLock(fn: () => Promise<void>): Promise<boolean>;
  recordFailure(batchId: string, attempts: number, lastError: string, nextAttemptAt: Date): Promise<void>;
  /** Sent batches due for a look, in nonce order. */
  duePending(): Promise<BatchRow[]>;
  /** Closed batches with a root, due to be sent, oldest first. */
  dueClosed(): Promise<BatchRow[]>;
  recordMined(batchId: string, blockNumber: number, confirmations: number): Promise<void>;
  /** A pending batch back to closed, its transaction forgotten, so it is signed again. */
  returnToClosed(batchId: string): Promise<void>;
  recordRebroadcast(batchId: string): Promise<void>;
  /** The highest nonce of this sender's in-flight transactions (null when none is). */
  maxPendingNonce(fromAddress: string): Promise<number | null>;
  /** A closed batch's signed transaction, recorded (as pending) before the node sees it. */
  recordSent(
    batchId: string,
    sent: { chainId: number; fromAddress: string; txHash: string; txNonce: number; rawTx: string },
  ): Promise<void>;
}
