// storeUpload (http/uploads.ts): an upload streamed into the blob store hands back its first bytes, so the request's
// later steps (the verify's meter, byContent's type check) need not read the blob back for them.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { BlobTooLargeError, FilesystemBlobStore, blobKeys, PUBLIC_OWNER } from '@cairn/blob';
import { newId } from '@cairn/ids';
import { SNIFF_BYTES } from '@cairn/sniff';
import { storeUpload } from '../src/http/uploads.js';

let root: string;
let blobs: FilesystemBlobStore;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'cairn-store-upload-'));
  blobs = new FilesystemBlobStore(root);
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

const key = () => blobKeys.upload(PUBLIC_OWNER, newId('request').slice(4));

describe('storeUpload', () => {
  it('stores every byte and answers the first SNIFF_BYTES, however the body is cut into chunks', async () => {
    const bytes = randomBytes(5000);
    // Chunks smaller than the head, straddling its end, and past it.
    const chunks = [bytes.subarray(0, 10), bytes.subarray(10, 40), bytes.subarray(40, 100), bytes.subarray(100)];
    const stored = await storeUpload(blobs, key(), Readable.from(chunks), {
      contentType: 'application/octet-stream',
      maxBytes: 10_000,
    });
    expect(stored.size).toBe(bytes.length);
    expect(stored.head.equals(bytes.subarray(0, SNIFF_BYTES))).toBe(true);
    expect((await blobs.getBuffer(stored.key))?.equals(bytes)).toBe(true);
  });

  it('answers the whole file as its head when it is shorter than SNIFF_BYTES', async () => {
    const bytes = randomBytes(20);
    const stored = await storeUpload(blobs, key(), Readable.from([bytes]), {
      contentType: 'application/octet-stream',
      maxBytes: 100,
    });
    expect(stored.head.equals(bytes)).toBe(true);
  });

  it('refuses a body past the limit, stores nothing, and stops reading the body', async () => {
    const body = Readable.from(
      (function* () {
        for (let i = 0; i < 1000; i++) yield randomBytes(1024);
      })(),
    );
    const target = key();
    await expect(
      storeUpload(blobs, target, body, { contentType: 'application/octet-stream', maxBytes: 10_000 }),
    ).rejects.toBeInstanceOf(BlobTooLargeError);
    expect(body.destroyed).toBe(true);
    expect(await blobs.getBuffer(target)).toBeNull();
  });
});
