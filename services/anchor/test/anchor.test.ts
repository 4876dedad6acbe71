import { describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { createPublicClient, http, type Hex } from 'viem';
import { newId } from '@cairn/ids';
import { commonV1 } from '@cairn/proto';
import { waitFor } from '@cairn/testing';
import { verifyAnchorProof, type AnchorProof } from '../../../tools/anchor/verify-proof.js';
import { fromHex, leafHash, verifyInclusion } from '@cairn/merkle';
import { anchorFleetFor, batchIn, digestOf, manifestOf } from './support/anchor-fleet.js';

const fleet = anchorFleetFor({
  ANCHOR_BATCH_MAX: '4',
  ANCHOR_BATCH_MAX_AGE_MS: '2000',
  ANCHOR_POLL_MS: '100',
  ANCHOR_RETRY_MAX_MS: '400',
  ANCHOR_CONFIRMATIONS: '1',
});

/** Polls until the batch is anchored (no timing is asserted; the jest timeout is the only limit). */
const anchored = (batchId: string) =>
  batchIn(fleet.anchor, batchId, commonV1.AnchorBatchState.ANCHORED, `batch ${batchId} anchored`);

/** Enqueues every item; answers the batches they went to. */
async function enqueueAll(items: ReadonlyArray<ReturnType<typeof manifestOf>>): Promise<Set<string>> {
  const batchIds = new Set<string>();
  for (const item of items) batchIds.add((await fleet.anchor.enqueue(item)).batchId);
  return batchIds;
}

async function proofJson(tenantId: string, batchId: string, assetId: string): Promise<AnchorProof> {
  const p = await fleet.anchor.getProof({ tenantId, batchId, assetId });
  return {
    batch_id: batchId,
    merkle_root: p.batch!.merkleRoot,
    chain_id: Number(p.batch!.chainId),
    tx_hash: p.batch!.txHash,
    block_number: Number(p.batch!.blockNumber),
    leaf_index: p.leafIndex,
    tree_size: p.treeSize,
    audit_path: p.auditPath,
    leaf_hash: p.leafHash,
    manifest_digest: p.manifestDigest,
  };
}

describe('anchor service on a local chain', () => {
  it('batches by size and age, anchors the roots, and proves every member', async () => {
    const tenants = [newId('tenant'), newId('tenant')];
    const items = Array.from({ length: 6 }, (_, i) => manifestOf(tenants[i % 2]!, `m${i}`));
    const queued = [];
    for (const item of items) queued.push(await fleet.anchor.enqueue(item));
    expect(queued.every((q) => q.status === commonV1.AnchorBatchState.QUEUED && q.batchId.startsWith('b_'))).toBe(true);
    // Size 4 closes the first batch; the last two close by age (2 s: long enough that four enqueues on a loaded
    // machine never straddle it, which a 300 ms age did).
    expect(new Set(queued.slice(0, 4).map((q) => q.batchId)).size).toBe(1);
    expect(queued[4]!.batchId).not.toBe(queued[0]!.batchId);
    expect(queued[5]!.batchId).toBe(queued[4]!.batchId);
    // A repeat enqueue of the same manifest returns its batch, adding nothing.
    expect((await fleet.anchor.enqueue(items[0]!)).batchId).toBe(queued[0]!.batchId);

    const client = createPublicClient({ transport: http(fleet.chain.url) });
    for (const batchId of [queued[0]!.batchId, queued[4]!.batchId]) {
      const batch = await anchored(batchId);
      expect(batch).toMatchObject({ chainId: 31337n, size: batchId === queued[0]!.batchId ? 4 : 2 });
      expect(batch.merkleRoot).toMatch(/^0x[0-9a-f]{64}$/);
      expect(batch.confirmedAt).toBeDefined();
      const tx = await client.getTransaction({ hash: batch.txHash as Hex });
      expect(tx.input).toBe(batch.merkleRoot);
      expect(tx.to?.toLowerCase()).toBe(tx.from.toLowerCase());
      expect(Number(tx.blockNumber)).toBe(Number(batch.blockNumber));
    }

    for (const [i, item] of items.entries()) {
      const proof = await proofJson(item.tenantId, queued[i]!.batchId, item.assetId);
      const report = await verifyAnchorProof(proof, item.manifestDigest, fleet.chain.url);
      expect(report).toMatchObject({ valid: true });
      // An altered digest and a non-member fail against the same proof.
      const altered = (item.manifestDigest[0] === 'a' ? 'b' : 'a') + item.manifestDigest.slice(1);
      expect((await verifyAnchorProof(proof, altered, fleet.chain.url)).checks.inclusion).toBe(false);
      expect((await verifyAnchorProof(proof, digestOf('not a member'), fleet.chain.url)).valid).toBe(false);
      expect(
        verifyInclusion(
          leafHash(fromHex(item.manifestDigest)),
          proof.leaf_index,
          proof.tree_size,
          proof.audit_path.map((p) => fromHex(p)),
          fromHex(proof.merkle_root),
        ),
      ).toBe(true);
    }

    // Proofs are tenant-scoped: the other tenant gets not-found for the same asset.
    await expect(
      fleet.anchor.getProof({ tenantId: tenants[1]!, batchId: queued[0]!.batchId, assetId: items[0]!.assetId }),
    ).rejects.toThrow(/not in batch|not_found|NOT_FOUND/i);

    // One anchor.confirmed per tenant per batch, with that tenant's manifest count and the anchor_batch meter.
    const { rows } = await fleet.admin.query<{ envelope: { tenant_id: string; data: Record<string, unknown> } }>(
      `select envelope from anchor.outbox where envelope->>'type' = 'anchor.confirmed' and envelope->'data'->>'batch_id' = any($1)`,
      [[queued[0]!.batchId, queued[4]!.batchId]],
    );
    const seen = rows
      .map(
        (r) =>
          `${r.envelope.data.batch_id as string}:${r.envelope.tenant_id}:${r.envelope.data.manifests as number}:${r.envelope.data['billing.meter'] as string}`,
      )
      .sort();
    expect(seen).toEqual(
      [
        `${queued[0]!.batchId}:${tenants[0]}:2:anchor_batch`,
        `${queued[0]!.batchId}:${tenants[1]}:2:anchor_batch`,
        `${queued[4]!.batchId}:${tenants[0]}:1:anchor_batch`,
        `${queued[4]!.batchId}:${tenants[1]}:1:anchor_batch`,
      ].sort(),
    );
  });

  it('checks a presented manifest digest against the root its batch carries on chain (CheckAnchor)', async () => {
    const tenantId = newId('tenant');
    const items = Array.from({ length: 3 }, (_, i) => manifestOf(tenantId, `check ${i}`));
    const batchIds = await enqueueAll(items);
    for (const batchId of batchIds) await anchored(batchId);

    // Every member's own digest is proved included in the root the chain carries.
    for (const item of items) {
      const answer = await fleet.anchor.checkAnchor({ assetId: item.assetId, manifestDigest: item.manifestDigest });
      expect(answer).toMatchObject({
        status: commonV1.AnchorBatchState.ANCHORED,
        match: true,
        reason: '',
        chainId: 31337n,
      });
      expect(answer.txHash).toMatch(/^0x[0-9a-f]{64}$/);
    }
    // Another manifest presented for an anchored asset is not what was anchored.
    expect(
      await fleet.anchor.checkAnchor({ assetId: items[0]!.assetId, manifestDigest: digestOf('another manifest') }),
    ).toMatchObject({ status: commonV1.AnchorBatchState.ANCHORED, match: false, reason: 'digest_not_anchored' });
    // Rewriting the stored digest cannot make another manifest pass: the proof is checked against the chain's root.
    const forged = digestOf(`forged ${Math.random()}`);
    await fleet.admin.query('update anchor.leaves set manifest_digest = $1 where asset_id = $2', [
      forged,
      items[1]!.assetId,
    ]);
    expect(await fleet.anchor.checkAnchor({ assetId: items[1]!.assetId, manifestDigest: forged })).toMatchObject({
      status: commonV1.AnchorBatchState.ANCHORED,
      match: false,
      reason: 'root_not_on_chain',
    });
    // An asset in no batch, and malformed input.
    expect(
      await fleet.anchor.checkAnchor({ assetId: newId('asset'), manifestDigest: items[0]!.manifestDigest }),
    ).toMatchObject({ status: commonV1.AnchorBatchState.NOT_ANCHORED, match: false });
    await expect(fleet.anchor.checkAnchor({ assetId: items[0]!.assetId, manifestDigest: 'xyz' })).rejects.toMatchObject(
      {
        code: 'cairn.validation.invalid_body',
      },
    );
  });

  it('keeps leaves tenant-private in the database (RLS forced on the owner)', async () => {
    const { rows } = await fleet.admin.query<{ relforcerowsecurity: boolean; relrowsecurity: boolean }>(
      `select relrowsecurity, relforcerowsecurity from pg_class where oid = 'anchor.leaves'::regclass`,
    );
    expect(rows[0]).toEqual({ relrowsecurity: true, relforcerowsecurity: true });
    const url = String(fleet.sandbox.env.DATABASE_URL);
    const app = new pg.Client({ connectionString: url });
    await app.connect();
    try {
      expect((await app.query('select count(*)::int as n from anchor.leaves')).rows[0]).toEqual({ n: 0 });
    } finally {
      await app.end();
    }
  });

  it('waits out an RPC outage and anchors everything once the node is back', async () => {
    await fleet.chain.stop();
    const tenantId = newId('tenant');
    const items = Array.from({ length: 3 }, (_, i) => manifestOf(tenantId, `outage ${i}`));
    const batchIds = await enqueueAll(items);
    // The batch closes, fails to send, and backs off; it is still there, queued.
    for (const batchId of batchIds) {
      await waitFor('a failed send', async () => {
        const { rows } = await fleet.admin.query<{ attempts: number; last_error: string | null }>(
          'select attempts, last_error from anchor.batches where batch_id = $1',
          [batchId],
        );
        return rows[0] && rows[0].attempts >= 1 && rows[0].last_error !== null;
      });
      expect((await fleet.anchor.getBatch({ batchId })).batch?.status).toBe(commonV1.AnchorBatchState.QUEUED);
    }
    await fleet.chain.restart();
    for (const batchId of batchIds) await anchored(batchId);
    for (const item of items) {
      const { rows } = await fleet.admin.query<{ batch_id: string }>(
        'select batch_id from anchor.leaves where manifest_id = $1',
        [item.manifestId],
      );
      const proof = await proofJson(tenantId, rows[0]!.batch_id, item.assetId);
      expect(await verifyAnchorProof(proof, item.manifestDigest, fleet.chain.url)).toMatchObject({ valid: true });
    }
  });

  it('re-broadcasts a transaction the node dropped', async () => {
    await fleet.chain.rpc('evm_setAutomine', [false]);
    const tenantId = newId('tenant');
    const item = manifestOf(tenantId, 'dropped');
    const { batchId } = await fleet.anchor.enqueue(item);
    const sent = await batchIn(fleet.anchor, batchId, commonV1.AnchorBatchState.PENDING, 'sent');
    await fleet.chain.rpc('hardhat_dropTransaction', [sent.txHash]);
    await waitFor('re-broadcast', async () => {
      const { rows } = await fleet.admin.query<{ broadcasts: number }>(
        'select broadcasts from anchor.batches where batch_id = $1',
        [batchId],
      );
      return (rows[0]?.broadcasts ?? 0) >= 2;
    });
    await fleet.chain.rpc('evm_setAutomine', [true]);
    await fleet.chain.rpc('evm_mine');
    const batch = await anchored(batchId);
    // The same signed transaction (same hash), not a second one.
    expect(batch.txHash).toBe(sent.txHash);
    const proof = await proofJson(tenantId, batchId, item.assetId);
    expect(await verifyAnchorProof(proof, item.manifestDigest, fleet.chain.url)).toMatchObject({ valid: true });
  });
});
