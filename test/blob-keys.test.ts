import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFile } from 'node:fs/promises';
import sharp from 'sharp';
import { newId } from '@cairn/ids';
import { signerV1 } from '@cairn/proto';
import { createClient } from '@cairn/rpc';
import { blobKeys, createBlobStore, type BlobStore } from '../packages/blob/src/index.js';
import { startStack, type Stack } from './support/stack.js';
import { SHARED_DIR } from '../packages/testing/src/shared.js';

// A blob key that reaches a service from outside (a gRPC request's upload key) is parsed against the tenant it is
// used for (packages/blob keys.ts): the signer signs, and a sign job later deletes, only the calling tenant's
// uploads. packages/blob/test/keys.test.ts has the parsing cases; this file shows the signer applies them.

let stack: Stack;
let blobs: BlobStore;
const signerClient = (address: string) => createClient(signerV1.SignerService, address);
let signer: ReturnType<typeof signerClient>;
let jpeg: Buffer;

const recipe = { recipeId: 'image-basic-v1', mediaTypes: ['image/jpeg'], meter: 'image_sign', derivedAssetDays: 30 };

beforeAll(async () => {
  stack = await startStack(['watermark', 'signer']);
  signer = signerClient(String(stack.env.SIGNER_GRPC_ADDR));
  blobs = createBlobStore(String(stack.env.BLOB_STORE_URL));
  const photo = await readFile(`${SHARED_DIR}/fixtures/photos/chelsea.png`);
  jpeg = await sharp(photo).resize(320, 320).jpeg({ quality: 70 }).toBuffer();
}, 120_000);

afterAll(async () => {
  signer?.close();
  await stack?.stop();
});

async function storedUpload(owner: string): Promise<string> {
  const key = blobKeys.upload(owner, newId('request').slice(4));
  await blobs.put(key, jpeg, { contentType: 'application/octet-stream' });
  return key;
}

/** A sign of `tenant`'s own stored upload, under a new asset id. */
async function signOwnUpload(tenant: string) {
  return signer.sign({ tenantId: tenant, assetId: newId('asset'), recipe, uploadBlobKey: await storedUpload(tenant) });
}

const refusal = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (error: unknown) => error,
  );

describe('blob keys from a request', () => {
  it('the signer signs its own tenant’s upload, and refuses another tenant’s without reading or deleting it', async () => {
    const tenant = newId('tenant');
    const other = newId('tenant');
    // The control: the same call with the tenant's own upload signs.
    const own = await signOwnUpload(tenant);
    expect(own.assetId).toMatch(/^a_/);

    const theirs = await storedUpload(other);
    const assetId = newId('asset');
    expect(await refusal(signer.sign({ tenantId: tenant, assetId, recipe, uploadBlobKey: theirs }))).toMatchObject({
      code: 'cairn.validation.invalid_body',
      message: expect.stringContaining('upload of this tenant') as unknown,
    });
    expect(await refusal(signer.getAsset({ tenantId: tenant, assetId }))).toMatchObject({ code: 'cairn.not_found' });
    // A job deletes its upload when it ends: another tenant's is refused before any job exists.
    expect(
      await refusal(
        signer.enqueueSign({ sign: { tenantId: tenant, assetId: newId('asset'), recipe, uploadBlobKey: theirs } }),
      ),
    ).toMatchObject({ code: 'cairn.validation.invalid_body' });
    expect(await blobs.getBuffer(theirs)).toEqual(jpeg);
  });

  it('refuses keys outside the uploads: a signed asset, a traversal, an absolute path', async () => {
    const tenant = newId('tenant');
    const signed = await signOwnUpload(tenant);
    const { asset } = await signer.getAsset({ tenantId: tenant, assetId: signed.assetId });
    const theirs = await storedUpload(newId('tenant'));
    for (const key of [asset!.blobKey, `${tenant}/uploads/../../${theirs}`, `/${theirs}`, `../${theirs}`]) {
      expect(
        await refusal(signer.sign({ tenantId: tenant, assetId: newId('asset'), recipe, uploadBlobKey: key })),
      ).toMatchObject({ code: 'cairn.validation.invalid_body' });
    }
  });
});
