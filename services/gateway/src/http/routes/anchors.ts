import { Router } from 'express';
import { isId } from '@cairn/ids';
import { CairnError } from '@cairn/errors';
import { anchorBatchStates, isoTimestamp, type anchorV1 } from '@cairn/proto';
import type { ClientOf } from '@cairn/rpc';
import { requireScope } from '../auth.js';
import { EXAMPLE, json, needsKey, NOT_FOUND, operationsOf } from '../openapi/describe.js';

export type AnchorClient = ClientOf<typeof anchorV1.AnchorService>;

function presentBatch(batch: anchorV1.Batch | undefined): Record<string, unknown> {
  if (!batch) throw new CairnError('cairn.internal_error', 'The anchor service returned no batch.');
  return {
    batch_id: batch.batchId,
    status: anchorBatchStates.fromProto(batch.status),
    merkle_root: batch.merkleRoot || null,
    size: batch.size,
    chain_id: batch.chainId > 0n ? Number(batch.chainId) : null,
    tx_hash: batch.txHash || null,
    block_number: batch.blockNumber > 0n ? Number(batch.blockNumber) : null,
    confirmed_at: isoTimestamp(batch.confirmedAt),
  };
}

function batchIdParam(raw: unknown): string {
  const value = typeof raw === 'string' ? raw : '';
  if (!isId('batch', value)) throw new CairnError('cairn.not_found', `No batch ${value}.`);
  return value;
}

export const operations = operationsOf('Anchoring', needsKey('read'), {
  getAnchorBatch: {
    route: 'get /v1/anchors/:batchId',
    summary: 'Read an anchor batch',
    answers: [json(200, 'The batch', { batch_id: 'ab_01JBZ3Q8M6V4W2X9Y7T5R3N1PK', status: 'anchored' })],
    errors: NOT_FOUND,
  },
  getAnchorProof: {
    route: 'get /v1/anchors/:batchId/proofs/:assetId',
    summary: "An asset's inclusion proof in a batch",
    answers: [
      json(200, 'The inclusion proof', {
        batch_id: 'ab_01JBZ3Q8M6V4W2X9Y7T5R3N1PK',
        asset_id: EXAMPLE.asset,
        proof: ['9f…'],
      }),
    ],
    errors: NOT_FOUND,
  },
});

/**
 * GET /v1/anchors/{batch_id} and GET /v1/anchors/{batch_id}/proofs/{asset_id}: a batch the caller has a manifest
 * in, and the inclusion proof of the caller's own asset (tools/anchor/verify-proof.ts checks it against the chain).
 */
export function anchorRoutes(deps: { anchor: AnchorClient }): Router {
  const router = Router();

  router.get('/v1/anchors/:batchId', requireScope('read'), async (req, res) => {
    const { batch } = await deps.anchor.getBatch({
      batchId: batchIdParam(req.params.batchId),
      tenantId: req.auth!.tenant.tenantId,
    });
    res.set('Cache-Control', 'private, no-store');
    res.json(presentBatch(batch));
  });

  router.get('/v1/anchors/:batchId/proofs/:assetId', requireScope('read'), async (req, res) => {
    const proof = await deps.anchor.getProof({
      tenantId: req.auth!.tenant.tenantId,
      batchId: batchIdParam(req.params.batchId),
      assetId: String(req.params.assetId),
    });
    res.set('Cache-Control', 'private, no-store');
    res.json({
      ...presentBatch(proof.batch),
      asset_id: proof.assetId,
      manifest_id: proof.manifestId,
      manifest_digest: proof.manifestDigest,
      leaf_index: proof.leafIndex,
      tree_size: proof.treeSize,
      leaf_hash: proof.leafHash,
      audit_path: proof.auditPath,
      algorithm:
        'RFC 6962: leaf = SHA-256(0x00 || manifest_digest), node = SHA-256(0x01 || left || right); root = calldata of tx_hash',
    });
  });

  return router;
}
