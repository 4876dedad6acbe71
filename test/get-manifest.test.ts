import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFile } from 'node:fs/promises';
import sharp from 'sharp';
import { newId } from '@cairn/ids';
import { signerV1 } from '@cairn/proto';
import { createClient } from '@cairn/rpc';
import { blobKeys, createBlobStore } from '../packages/blob/src/index.js';
import { startStack, type Stack } from './support/stack.js';
import { SHARED_DIR } from '../packages/testing/src/shared.js';

// GetManifest with without_store answers what a manifest belongs to without its store (the verifier's stored
// verdict reads the signed file itself): the same record as the full answer, the store left out.

let stack: Stack;
const signerClient = (address: string) => createClient(signerV1.SignerService, address);
let signer: ReturnType<typeof signerClient>;

beforeAll(async () => {
  stack = await startStack(['watermark', 'signer']);
  signer = signerClient(String(stack.env.SIGNER_GRPC_ADDR));
}, 120_000);

afterAll(async () => {
  signer?.close();
  await stack?.stop();
});

describe('GetManifest without_store', () => {
  it('answers the same record as the full answer, with an empty store; an unknown manifest is still not found', async () => {
    const tenant = newId('tenant');
    const blobs = createBlobStore(String(stack.env.BLOB_STORE_URL));
    const upload = blobKeys.upload(tenant, newId('request').slice(4));
    const photo = await readFile(`${SHARED_DIR}/fixtures/photos/chelsea.png`);
    await blobs.put(upload, await sharp(photo).resize(320, 320).jpeg({ quality: 70 }).toBuffer(), {
      contentType: 'application/octet-stream',
    });
    const signed = await signer.sign({
      tenantId: tenant,
      assetId: newId('asset'),
      recipe: { recipeId: 'image-basic-v1', mediaTypes: ['image/jpeg'], meter: 'image_sign', derivedAssetDays: 30 },
      uploadBlobKey: upload,
    });

    const full = await signer.getManifest({ manifestId: signed.manifestId });
    const bare = await signer.getManifest({ manifestId: signed.manifestId, withoutStore: true });
    expect(full.manifestStore.length).toBeGreaterThan(0);
    expect(bare.manifestStore).toHaveLength(0);
    const { manifestStore: _store, ...record } = full;
    expect(record.assetId).toBe(signed.assetId);
    expect(record.assetBlobKey).not.toBe('');
    expect(bare).toMatchObject(record);

    await expect(signer.getManifest({ manifestId: newId('manifest'), withoutStore: true })).rejects.toMatchObject({
      code: 'cairn.not_found',
    });
  });
});
