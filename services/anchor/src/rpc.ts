import { anchorBatchStates, toTimestamp, type anchorV1 } from '@cairn/proto';
import type { ImplOf } from '@cairn/rpc';
import type { BatchRow, Batches } from './app/batches.js';
import type { AnchorChecker } from './app/check.js';
import { publicStatus } from './domain/status.js';

export interface AnchorRpcDeps {
  batches: Batches;
  /** Chain id reported for batches not yet sent (the configured chain's, when known). */
  chainId: () => number | undefined;
  checker: AnchorChecker;
}

export function presentBatch(row: BatchRow, fallbackChainId: number | undefined): anchorV1.Batch {
  return {
    $typeName: 'cairn.anchor.v1.Batch',
    batchId: row.batchId,
    status: anchorBatchStates.toProto(publicStatus(row.status)),
    merkleRoot: row.merkleRoot ?? '',
    size: row.size,
    chainId: BigInt(row.chainId ?? fallbackChainId ?? 0),
    txHash: row.status === 'pending' || row.status === 'anchored' ? (row.txHash ?? '') : '',
    blockNumber: BigInt(row.status === 'anchored' ? (row.blockNumber ?? 0) : 0),
    ...(row.confirmedAt ? { confirmedAt: toTimestamp(row.confirmedAt) } : {}),
  };
}

/** cairn.anchor.v1.AnchorService handlers. */
export function anchorHandlers(deps: AnchorRpcDeps): ImplOf<typeof anchorV1.AnchorService> {
  return {
    enqueue: async (request) => {
      const result = await deps.batches.enqueue(request);
      return { batchId: result.batchId, status: anchorBatchStates.toProto(result.status) };
    },
    getBatch: async (request) => {
      const row = await deps.batches.batch(request.batchId, request.tenantId);
      return { batch: presentBatch(row, deps.chainId()) };
    },
    getProof: async (request) => {
      const proof = await deps.batches.proof(request.tenantId, request.batchId, request.assetId);
      return {
        batch: presentBatch(proof.batch, deps.chainId()),
        assetId: proof.leaf.assetId,
        manifestId: proof.leaf.manifestId,
        manifestDigest: proof.leaf.manifestDigest,
        leafIndex: proof.leaf.leafIndex,
        treeSize: proof.batch.size,
        leafHash: proof.leafHash,
        auditPath: proof.auditPath,
      };
    },
    checkAnchor: async (request) => {
      const result = await deps.checker.check(request.assetId, request.manifestDigest);
      const batch = result.batch ? presentBatch(result.batch, deps.chainId()) : undefined;
      return {
        status: anchorBatchStates.toProto(result.status),
        match: result.match,
        reason: result.reason ?? '',
        batchId: batch?.batchId ?? '',
        chainId: batch?.chainId ?? 0n,
        txHash: batch?.txHash ?? '',
        blockNumber: batch?.blockNumber ?? 0n,
        ...(batch?.confirmedAt ? { confirmedAt: batch.confirmedAt } : {}),
      };
    },
  };
}
