import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import sharp from 'sharp';
import { freePort, type HardhatNode, PG_ADMIN_URL, startHardhat, waitFor } from '@cairn/testing';
import { verifyAnchorProof, type AnchorProof } from '../tools/anchor/verify-proof.js';
import { multipart, onboard, startStack, type Stack } from './support/stack.js';

let chain: HardhatNode;
let stack: Stack;
let tenant: { tenant_id: string; api_key: string };
let other: { tenant_id: string; api_key: string };
let image: Buffer;

beforeAll(async () => {
  chain = await startHardhat(await freePort());
  stack = await startStack(['watermark', 'signer', 'anchor', 'gateway'], { ANCHOR_RPC_URL: chain.url, ANCHOR_BATCH_MAX_AGE_MS: '300', ANCHOR_POLL_MS: '100' });
  tenant = await onboard(stack);
  other = await onboard(stack);
  image = await sharp(await readFile('/work/shared/fixtures/photos/chelsea.png')).jpeg({ quality: 85 }).toBuffer();
}, 120_000);

afterAll(async () => {
  await stack?.stop();
  await chain?.stop();
});

const sign = async () => {
  const res = await stack.request('/v1/sign', { method: 'POST', key: tenant.api_key, headers: { 'idempotency-key': crypto.randomUUID() }, body: multipart({ recipe: 'image-genai-v1' }, { field: 'asset', bytes: image, name: 'a.jpg' }) });
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
    expect(Object.keys(batch).sort()).toEqual(['batch_id', 'block_number', 'chain_id', 'confirmed_at', 'merkle_root', 'size', 'status', 'tx_hash']);
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
    expect((await stack.request(`/v1/anchors/${batchId}/proofs/${signed.asset_id}`, { key: other.api_key })).status).toBe(404);
    expect((await stack.request(`/v1/anchors/${batchId}`)).status).toBe(401);
  });

  it('still signs while the anchor service is down, and anchors the manifest from asset.signed once it is back', async () => {
    await stack.stopService('anchor');
    const signed = await sign();
    expect(signed.anchor).toBeUndefined();
    await stack.restart('anchor');
    const admin = new pg.Client({ connectionString: PG_ADMIN_URL.replace(/\/[^/]*$/, `/${stack.sandbox.databaseName}`) });
    await admin.connect();
    try {
      const batchId = await waitFor('the manifest in a batch', async () => (await admin.query<{ batch_id: string }>('select batch_id from anchor.leaves where manifest_id = $1', [signed.manifest_id])).rows[0]?.batch_id);
      await waitFor('the batch to be anchored', async () => ((await (await stack.request(`/v1/anchors/${batchId}`, { key: tenant.api_key })).json()) as { status: string }).status === 'anchored');
      const proof = (await (await stack.request(`/v1/anchors/${batchId}/proofs/${signed.asset_id}`, { key: tenant.api_key })).json()) as AnchorProof;
      expect(await verifyAnchorProof(proof, proof.manifest_digest!, chain.url)).toMatchObject({ valid: true });
    } finally {
      await admin.end();
    }
  });
});
