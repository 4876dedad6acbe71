import { CairnError } from '@cairn/errors';
import { auditPath, fromHex, leafHash, toHex, treeLevels } from '@cairn/merkle';
import { Lru } from '../domain/lru.js';
import type { PublicStatus } from '../domain/status.js';
import type { BatchRecords, BatchRow, EnqueueInput, LeafRow } from './ports.js';

export type { BatchRow, EnqueueInput, LeafRow };

/** The statements the batch use cases run (store/batches.ts). */
export type BatchQueries = Pick<BatchRecords, 'enqueue' | 'getBatch' | 'tenantHasLeafIn' | 'tenantLeaf' | 'leavesOf'>;

export interface Proof {
  batch: BatchRow;
  leaf: LeafRow;
  leafHash: string;
  auditPath: string[];
}

/** The anchor service's batch use cases: enqueue a manifest digest, show a batch, prove an asset's inclusion. */
export class Batches {
  /**
   * The manifests (tenant and manifest id) this process enqueued: asset.signed enqueues every anchored manifest
   * again, behind the signer's Enqueue call, and a leaf once committed stays, so that repeat needs no transaction.
   */
  private readonly enqueued = new Lru<true>(10_000);

  constructor(
    private readonly store: BatchQueries,
    private readonly batchMax: number,
    /** Told after each enqueue (`filled`: it closed the batch), so the batcher's loop can wake. */
    private readonly onEnqueued: (filled: boolean) => void = () => undefined,
  ) {}

  /** Adds a digest to the open batch (a repeat of the same tenant and manifest returns the batch it is in). */
  async enqueue(input: EnqueueInput): Promise<{ batchId: string; status: PublicStatus }> {
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
    const { batchId, status, filled } = await this.store.enqueue(input, this.batchMax);
    this.enqueued.set(enqueuedKey(input), true);
    this.onEnqueued(filled);
    return { batchId, status };
  }

  /**
   * Enqueue's safety net (asset.signed): nothing to do for a manifest this process has enqueued already; any other
   * (enqueued by another replica, or not at all) goes through enqueue, where a repeat is found in the database.
   */
  async enqueueOnce(input: EnqueueInput): Promise<void> {
    if (this.enqueued.get(enqueuedKey(input))) return;
    await this.enqueue(input);
  }

  /** A batch, only when `tenantId` (if given) has a manifest in it. */
  async batch(batchId: string, tenantId: string): Promise<BatchRow> {
    const row = batchId ? await this.store.getBatch(batchId) : undefined;
    if (!row || (tenantId && !(await this.store.tenantHasLeafIn(tenantId, row.batchId))))
      throw new CairnError('cairn.not_found', `Batch ${batchId} does not exist.`);
    return row;
  }

  /**
   * The inclusion proof of a tenant's asset: the leaf is looked up as that tenant (another tenant's asset is
   * simply not found), then the tree is rebuilt from the batch's digests (only hashes leave this function).
   */
  async proof(tenantId: string, batchId: string, assetId: string): Promise<Proof> {
    if (!tenantId) throw new CairnError('cairn.validation.invalid_body', 'tenant_id is required');
    const leaf = await this.store.tenantLeaf(tenantId, batchId, assetId);
    if (!leaf) throw new CairnError('cairn.not_found', `Asset ${assetId} is not in batch ${batchId}.`);
    const batch = await this.store.getBatch(batchId);
    if (!batch) throw new CairnError('cairn.not_found', `Batch ${batchId} does not exist.`);
    if (!batch.merkleRoot)
      throw new CairnError(
        'cairn.not_found',
        `Batch ${batchId} is still open: its proofs exist once it closes (within seconds).`,
      );
    const digests = await this.store.leavesOf(batchId);
    const levels = treeLevels(digests.map((r) => leafHash(fromHex(r.manifestDigest, 32))));
    return {
      batch,
      leaf,
      leafHash: toHex(levels[0]![leaf.leafIndex]!),
      auditPath: auditPath(levels, leaf.leafIndex).map(toHex),
    };
  }
}

const enqueuedKey = (input: EnqueueInput): string => `${input.tenantId}/${input.manifestId}`;
