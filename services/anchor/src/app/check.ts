import type { Hex } from 'viem';
import { CairnError } from '@cairn/errors';
import { rootFromCalldata } from '../domain/calldata.js';
import { Lru } from '../domain/lru.js';
import { auditPath, fromHex, leafHash, treeLevels, verifyInclusion } from '@cairn/merkle';
import { publicStatus, type PublicStatus } from '../domain/status.js';
import type { BatchRecords, BatchRow, ChainReader, ChainTransaction } from './ports.js';

/** Why an anchored asset's check failed. */
export type MismatchReason =
  'digest_not_anchored' | 'root_not_on_chain' | 'transaction_not_found' | 'transaction_mismatch' | 'chain_mismatch';

export interface AnchorCheck {
  status: 'not_anchored' | PublicStatus;
  /** Only meaningful when anchored. */
  match: boolean;
  reason?: MismatchReason;
  batch?: BatchRow;
}

/**
 * The verifier's anchor signal, computed where the leaves and the chain client are. For an asset's leaf in an
 * anchored batch: leaf = SHA-256(0x00 ‖ presented digest), walk the audit path (rebuilt from the batch's digests)
 * and compare the result with the root carried as calldata by the batch's transaction *as the chain returns it*
 * — the database's own root is not trusted. The presented digest is the caller's (the manifest store found in
 * the file), so a different manifest, a changed leaf set or a transaction carrying another root all fail.
 *
 * Caches: the on-chain root per transaction hash (a confirmed transaction's calldata never changes; keyed by the
 * hash, so a batch pointing at another transaction is a miss) and the audit path per (batch, leaf) of anchored
 * batches (their leaves are fixed). A verify then costs two indexed reads and ~log2(n) hashes.
 */
export class AnchorChecker {
  private readonly roots = new Lru<{ root: Hex | undefined; from: Hex; to: Hex | null; blockNumber: number }>(10_000);
  private readonly paths = new Lru<Buffer[]>(10_000);

  constructor(
    private readonly store: BatchRecords,
    private readonly chain: ChainReader,
  ) {}

  async check(assetId: string, manifestDigest: string): Promise<AnchorCheck> {
    if (!assetId) throw new CairnError('cairn.validation.invalid_body', 'asset_id is required');
    if (!/^[0-9a-f]{64}$/.test(manifestDigest))
      throw new CairnError(
        'cairn.validation.invalid_body',
        'manifest_digest must be 64 lowercase hex characters (SHA-256).',
      );
    const leaf = await this.store.latestLeafOfAsset(assetId);
    if (!leaf) return { status: 'not_anchored', match: false };
    const batch = await this.store.getBatch(leaf.batchId);
    if (!batch) return { status: 'not_anchored', match: false };
    if (batch.status !== 'anchored' || !batch.txHash || !batch.merkleRoot)
      return { status: publicStatus(batch.status), match: false, batch };

    const onChain = await this.chainRoot(batch.txHash as Hex);
    const mismatch = (reason: MismatchReason): AnchorCheck => ({ status: 'anchored', match: false, reason, batch });
    if (batch.chainId !== null && batch.chainId !== (await this.chainIdOrUnavailable()))
      return mismatch('chain_mismatch');
    if (!onChain) return mismatch('transaction_not_found');
    // The anchoring account's self-transaction, mined where the batch says.
    const selfTx = onChain.to !== null && onChain.to.toLowerCase() === onChain.from.toLowerCase();
    const sender = !batch.fromAddress || batch.fromAddress.toLowerCase() === onChain.from.toLowerCase();
    if (
      !selfTx ||
      !sender ||
      (batch.blockNumber !== null && batch.blockNumber !== onChain.blockNumber) ||
      !onChain.root
    )
      return mismatch('transaction_mismatch');

    const path = await this.auditPathOf(batch, leaf.leafIndex);
    // The database no longer holds the batch it anchored (rows lost or added): no proof leads to the chain's root.
    if (!path) return mismatch('root_not_on_chain');
    const included = verifyInclusion(
      leafHash(fromHex(manifestDigest, 32)),
      leaf.leafIndex,
      batch.size,
      path,
      fromHex(onChain.root, 32),
    );
    if (included) return { status: 'anchored', match: true, batch };
    return mismatch(manifestDigest !== leaf.manifestDigest ? 'digest_not_anchored' : 'root_not_on_chain');
  }

  private async chainIdOrUnavailable(): Promise<number> {
    try {
      return await this.chain.chainId();
    } catch {
      throw new CairnError('cairn.unavailable', 'The chain node does not answer; the anchor cannot be checked now.');
    }
  }

  private async chainRoot(
    hash: Hex,
  ): Promise<{ root: Hex | undefined; from: Hex; to: Hex | null; blockNumber: number } | null> {
    const key = hash.toLowerCase();
    const cached = this.roots.get(key);
    if (cached) return cached;
    let tx: ChainTransaction | null;
    try {
      tx = await this.chain.transaction(hash);
    } catch {
      throw new CairnError('cairn.unavailable', 'The chain node does not answer; the anchor cannot be checked now.');
    }
    // Not found is not cached: a node that is still syncing may know it later.
    if (!tx) return null;
    const value = { root: rootFromCalldata(tx.input), from: tx.from, to: tx.to, blockNumber: tx.blockNumber };
    this.roots.set(key, value);
    return value;
  }

  private async auditPathOf(batch: BatchRow, leafIndex: number): Promise<Buffer[] | undefined> {
    const key = `${batch.batchId}:${leafIndex}`;
    const cached = this.paths.get(key);
    if (cached) return cached;
    const digests = await this.store.leavesOf(batch.batchId);
    if (digests.length !== batch.size || leafIndex >= digests.length) return undefined;
    const levels = treeLevels(digests.map((r) => leafHash(fromHex(r.manifestDigest, 32))));
    const path = auditPath(levels, leafIndex);
    this.paths.set(key, path);
    return path;
  }
}
