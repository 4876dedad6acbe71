import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import sharp from 'sharp';
import { newId } from '@cairn/ids';
import { freePort, type HardhatNode, startHardhat, waitFor } from '@cairn/testing';
import { verifyAnchorProof, type AnchorProof } from '../tools/anchor/verify-proof.js';
import { onboard, postSign, startStack, type Stack, verifyUpload } from './support/stack.js';
import { SHARED_DIR } from '../packages/testing/src/shared.js';

let chain: HardhatNode;
let stack: Stack;
let tenant: { tenant_id: string; api_key: string };
let other: { tenant_id: string; api_key: string };
let image: Buffer;
let admin: pg.Client;

beforeAll(async () => {
  chain = await startHardhat(await freePort());
  // Two manifests close a batch at once (two tenants' signs share one); a single one closes after 1.5 s.
  stack = await startStack(['watermark', 'signer', 'verifier', 'anchor', 'gateway'], {
    ANCHOR_RPC_URL: chain.url,
    ANCHOR_BATCH_MAX: '2',
    ANCHOR_BATCH_MAX_AGE_MS: '1500',
    ANCHOR_POLL_MS: '100',
    PUBLIC_VERIFY_PER_MINUTE: '1000',
  });
  tenant = await onboard(stack);
  other = await onboard(stack);
  image = await sharp(await readFile(`${SHARED_DIR}/fixtures/photos/chelsea.png`))
    .jpeg({ quality: 85 })
    .toBuffer();
  admin = await stack.sandbox.adminClient();
}, 120_000);

afterAll(async () => {
  await admin?.end();
  await stack?.stop();
  await chain?.stop();
});

const sign = async (key = tenant.api_key) => {
  const res = await postSign(stack, key, { recipe: 'image-genai-v1', bytes: image, name: 'a.jpg' });
  expect(res.status).toBe(200);
  return (await res.json()) as { asset_id: string; manifest_id: string; anchor?: { batch_id: string; status: string } };
};

describe('anchoring through the API', () => {
  it('signs with an anchor reference, anchors the batch, and serves a proof that verifies against the chain', async () => {
    const signed = await sign();
    expect(signed.anchor).toMatchObject({ status: 'queued' });
    const batchId = signed.anchor!.batch_id;
    const batch = await waitFor('the batch to be anchored', async () => {
      const res = await stack.request(`/v1/anchors/${batchId}`, { key: tenant.api_key });
      expect(res.status).toBe(200);
      const body = (await res.json()) as Record<string, unknown>;
      return body.status === 'anchored' ? body : undefined;
    });
    expect(Object.keys(batch).sort()).toEqual([
      'batch_id',
      'block_number',
      'chain_id',
      'confirmed_at',
      'merkle_root',
      'size',
      'status',
      'tx_hash',
    ]);
    expect(batch).toMatchObject({ batch_id: batchId, chain_id: 31337, size: 1 });

    const proofRes = await stack.request(`/v1/anchors/${batchId}/proofs/${signed.asset_id}`, { key: tenant.api_key });
    expect(proofRes.status).toBe(200);
    const proof = (await proofRes.json()) as AnchorProof;
    // The digest is the verifier's own: SHA-256 of the manifest store as served publicly.
    const manifest = Buffer.from(await (await stack.request(`/v1/manifests/${signed.manifest_id}`)).arrayBuffer());
    const digest = createHash('sha256').update(manifest).digest('hex');
    expect(proof.manifest_digest).toBe(digest);
    expect(await verifyAnchorProof(proof, digest, chain.url)).toMatchObject({ valid: true });

    // Another tenant sees neither the batch nor the proof.
    expect((await stack.request(`/v1/anchors/${batchId}`, { key: other.api_key })).status).toBe(404);
    expect(
      (await stack.request(`/v1/anchors/${batchId}/proofs/${signed.asset_id}`, { key: other.api_key })).status,
    ).toBe(404);
    expect((await stack.request(`/v1/anchors/${batchId}`)).status).toBe(401);
  });

  it('still signs while the anchor service is down, and anchors the manifest from asset.signed once it is back', async () => {
    await stack.stopService('anchor');
    const signed = await sign();
    expect(signed.anchor).toBeUndefined();
    await stack.restart('anchor');
    const admin = await stack.sandbox.adminClient();
    try {
      const batchId = await waitFor(
        'the manifest in a batch',
        async () =>
          (
            await admin.query<{ batch_id: string }>('select batch_id from anchor.leaves where manifest_id = $1', [
              signed.manifest_id,
            ])
          ).rows[0]?.batch_id,
      );
      await waitFor(
        'the batch to be anchored',
        async () =>
          (
            (await (await stack.request(`/v1/anchors/${batchId}`, { key: tenant.api_key })).json()) as {
              status: string;
            }
          ).status === 'anchored',
      );
      const proof = (await (
        await stack.request(`/v1/anchors/${batchId}/proofs/${signed.asset_id}`, { key: tenant.api_key })
      ).json()) as AnchorProof;
      expect(await verifyAnchorProof(proof, proof.manifest_digest!, chain.url)).toMatchObject({ valid: true });
    } finally {
      await admin.end();
    }
  });
});

interface Verdict {
  status: string;
  confidence: number | null;
  signals: Record<string, unknown>;
  warnings: string[];
  developer_explanation: string;
  proves: string[];
}

type AnchoredAsset = { asset_id: string; batch_id: string; file: Buffer };
/** A Cairn file whose batch is anchored: the anchor_match test's, or signed on first use, so no test needs another to run first. */
let anchoredAsset: Promise<AnchoredAsset> | undefined;
const batchStatus = async (batchId: string, key = tenant.api_key) =>
  (
    (await (await stack.request(`/v1/anchors/${batchId}`, { key })).json()) as {
      status: string;
      tx_hash: string;
      block_number: number;
    }
  ).status;
const anchoredBatch = (batchId: string, key = tenant.api_key) =>
  waitFor(`batch ${batchId} anchored`, async () => (await batchStatus(batchId, key)) === 'anchored');
/**
 * The batch an asset's manifest went into. Read from the anchor schema rather than the Sign result: right after the
 * anchor service restarts (earlier tests stop it), the signer's Enqueue may not reach it in time, and the manifest
 * then joins a batch through asset.signed (the documented fallback), with no `anchor` in the Sign result.
 */
const batchOf = (assetId: string) =>
  waitFor(
    `asset ${assetId} in a batch`,
    async () =>
      (await admin.query<{ batch_id: string }>('select batch_id from anchor.leaves where asset_id = $1', [assetId]))
        .rows[0]?.batch_id,
  );
const signedFile = async (assetId: string, key = tenant.api_key) =>
  Buffer.from(await (await stack.request(`/v1/assets/${assetId}/content`, { key })).arrayBuffer());
const anchored = (): Promise<AnchoredAsset> =>
  (anchoredAsset ??= (async () => {
    const signed = await sign();
    const batchId = await batchOf(signed.asset_id);
    await anchoredBatch(batchId);
    return { asset_id: signed.asset_id, batch_id: batchId, file: await signedFile(signed.asset_id) };
  })());
const verifyFile = (bytes: Buffer): Promise<Verdict> => verifyUpload<Verdict>(stack, bytes, 'signed.jpg');

describe('the verifier’s anchor signal', () => {
  it('proves the manifest store found in the file is included in the root on chain: anchor_match', async () => {
    const signed = await sign();
    const batchId = await batchOf(signed.asset_id);
    await anchoredBatch(batchId);
    const file = await signedFile(signed.asset_id);
    const verdict = await verifyFile(file);
    expect(verdict.status).toBe('verified_manifest_and_watermark_match');
    expect(verdict.signals.anchor_match).toBe(true);
    expect(verdict.warnings).toEqual([]);
    expect(verdict.proves.some((p) => /recorded on a public ledger/.test(p))).toBe(true);
    expect(verdict.developer_explanation).toMatch(/proved included/);
    // The authenticated verify by asset id sees the same.
    const byId = await stack.request('/v1/verify', {
      method: 'POST',
      key: tenant.api_key,
      json: { asset_id: signed.asset_id },
    });
    expect(((await byId.json()) as Verdict).signals.anchor_match).toBe(true);
    anchoredAsset = Promise.resolve({ asset_id: signed.asset_id, batch_id: batchId, file });
  });

  it('answers anchor_mismatch when the batch’s transaction on chain carries another root', async () => {
    const asset = await anchored();
    const [from] = await chain.rpc<string[]>('eth_accounts');
    // A real transaction of the anchoring account to itself, carrying some other 32 bytes.
    const otherTx = await chain.rpc<string>('eth_sendTransaction', [
      { from, to: from, data: `0x${createHash('sha256').update(`other root ${Math.random()}`).digest('hex')}` },
    ]);
    const receipt = await waitFor('the other transaction mined', () =>
      chain.rpc<{ blockNumber: string } | null>('eth_getTransactionReceipt', [otherTx]).then((r) => r ?? undefined),
    );
    const { rows } = await admin.query<{ tx_hash: string; block_number: string }>(
      'select tx_hash, block_number from anchor.batches where batch_id = $1',
      [asset.batch_id],
    );
    await admin.query('update anchor.batches set tx_hash = $1, block_number = $2 where batch_id = $3', [
      otherTx,
      Number(BigInt(receipt.blockNumber)),
      asset.batch_id,
    ]);
    try {
      const verdict = await verifyFile(asset.file);
      expect(verdict.status).toBe('anchor_mismatch');
      expect(verdict.signals.anchor_match).toBe(false);
      expect(verdict.confidence).not.toBeNull();
      expect(verdict.confidence!).toBeLessThanOrEqual(0.35);
      expect(verdict.developer_explanation).toMatch(/root_not_on_chain/);
    } finally {
      await admin.query('update anchor.batches set tx_hash = $1, block_number = $2 where batch_id = $3', [
        rows[0]!.tx_hash,
        rows[0]!.block_number,
        asset.batch_id,
      ]);
    }
    // Pointed back at its own transaction, the anchor matches again.
    expect((await verifyFile(asset.file)).signals.anchor_match).toBe(true);
  });

  it('reports the anchor as pending (not checked) while the batch waits for the chain, then matches', async () => {
    await chain.rpc('evm_setAutomine', [false]);
    try {
      const signed = await sign();
      const batchId = await batchOf(signed.asset_id);
      await waitFor('the batch sent, not mined', async () => (await batchStatus(batchId)) === 'pending');
      const verdict = await verifyFile(await signedFile(signed.asset_id));
      expect(verdict.status).toBe('verified_manifest_and_watermark_match');
      expect(verdict.signals).not.toHaveProperty('anchor_match');
      expect(verdict.warnings).toEqual([]);
      expect(verdict.developer_explanation).toMatch(/not confirmed on chain/);
      await chain.rpc('evm_setAutomine', [true]);
      await chain.rpc('evm_mine');
      await anchoredBatch(batchId);
      expect((await verifyFile(await signedFile(signed.asset_id))).signals.anchor_match).toBe(true);
    } finally {
      await chain.rpc('evm_setAutomine', [true]);
    }
  });
});

describe('billing of anchor_batch', () => {
  it('meters one anchor_batch per tenant with manifests in a confirmed batch, once even when the event comes again', async () => {
    const developer = await onboard(stack);
    const growth = await onboard(stack, 'growth');
    const [a, b] = await Promise.all([sign(developer.api_key), sign(growth.api_key)]);
    // Two manifests close the batch: both tenants are in it.
    const batchId = await batchOf(a.asset_id);
    expect(await batchOf(b.asset_id)).toBe(batchId);
    await anchoredBatch(batchId, developer.api_key);

    const anchorBatch = async (key: string) =>
      (
        (await (await stack.request('/v1/usage', { key })).json()) as {
          meters: Record<string, { used: number; limit: number; overage?: number }>;
        }
      ).meters.anchor_batch;
    // Developer: the meter is not in the plan; the batch is recorded (limit 0) and never refused or charged.
    expect(
      await waitFor('developer metered', async () =>
        (await anchorBatch(developer.api_key))?.used === 1 ? anchorBatch(developer.api_key) : undefined,
      ),
    ).toEqual({ used: 1, limit: 0 });
    // Growth: counted against the 3,000 included.
    expect(
      await waitFor('growth metered', async () =>
        (await anchorBatch(growth.api_key))?.used === 1 ? anchorBatch(growth.api_key) : undefined,
      ),
    ).toEqual({ used: 1, limit: 3000 });

    // The same event again (a second copy through the outbox relay, under another JetStream message id), then a
    // distinct sentinel event; the consumer handles them in order, so once the sentinel is processed the copy was.
    const original = await admin.query<{
      subject: string;
      envelope: Record<string, unknown>;
      headers: Record<string, string>;
    }>(
      `select subject, envelope, headers from anchor.outbox where envelope->>'type' = 'anchor.confirmed' and envelope->>'tenant_id' = $1 and envelope->'data'->>'batch_id' = $2`,
      [developer.tenant_id, batchId],
    );
    expect(original.rowCount).toBe(1);
    const row = original.rows[0]!;
    const sentinel = {
      ...row.envelope,
      event_id: newId('event'),
      created_at: new Date().toISOString(),
      // Another batch's confirmation, complete (consumers drop an event that does not match its type's schema).
      data: { ...(row.envelope.data as Record<string, unknown>), batch_id: newId('batch') },
    };
    await admin.query(
      'insert into anchor.outbox (event_id, subject, envelope, headers) values ($1, $2, $3, $4), ($5, $2, $6, $4)',
      [
        newId('event'),
        row.subject,
        JSON.stringify(row.envelope),
        JSON.stringify(row.headers),
        sentinel.event_id,
        JSON.stringify(sentinel),
      ],
    );
    await waitFor(
      'the sentinel metered',
      async () =>
        (
          await admin.query(
            `select 1 from billing.processed_events where consumer = 'billing-event-meter' and event_id = $1`,
            [sentinel.event_id],
          )
        ).rowCount === 1,
    );
    // The copy added nothing; the sentinel (another batch) added one.
    expect((await anchorBatch(developer.api_key))?.used).toBe(2);
    expect((await anchorBatch(growth.api_key))?.used).toBe(1);
  });
});

// Last: it stops the anchor service, and nothing after it should depend on how fast the signer reconnects.
describe('the anchor signal without the anchor service', () => {
  it('still answers when the anchor service is down: inconclusive with anchor_unavailable', async () => {
    const { file } = await anchored();
    await stack.stopService('anchor');
    try {
      const verdict = await verifyFile(file);
      expect(verdict.status).toBe('inconclusive');
      expect(verdict.warnings).toContain('anchor_unavailable');
      expect(verdict.signals).not.toHaveProperty('anchor_match');
    } finally {
      await stack.restart('anchor');
    }
  });
});
