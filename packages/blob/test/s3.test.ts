import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import S3rver from 's3rver';
import { BlobTooLargeError, createBlobStore, S3BlobStore, type BlobStore } from '../src/index.js';

// A real S3-compatible server on loopback (s3rver), spoken to through the real AWS SDK.
let server: S3rver;
let directory: string;
let store: BlobStore;
let client: S3Client;

/** The content in 64 KiB chunks, as a socket would deliver it. */
function chunked(content: Buffer): Readable {
  return Readable.from(
    (function* () {
      for (let i = 0; i < content.length; i += 65_536) yield content.subarray(i, i + 65_536);
    })(),
  );
}

beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'cairn-s3rver-'));
  server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory });
  const { port } = await server.run();
  client = new S3Client({
    endpoint: `http://127.0.0.1:${port}`,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
  });
  await client.send(new CreateBucketCommand({ Bucket: 'cairn-test' }));
  store = new S3BlobStore({ bucket: 'cairn-test', prefix: 'blobs/', client });
});
afterAll(async () => {
  await server.close();
  await rm(directory, { recursive: true, force: true });
});

describe('S3BlobStore', () => {
  it('puts a streamed blob with its hash as metadata and reads it back', async () => {
    const content = Buffer.alloc(1024 * 1024 + 3, 9);
    const info = await store.put('t_1/assets/a.jpg', Readable.from([content]), { contentType: 'image/jpeg' });
    expect(info.sha256).toBe(createHash('sha256').update(content).digest('hex'));
    expect(await store.head('t_1/assets/a.jpg')).toEqual(info);
    expect((await store.getBuffer('t_1/assets/a.jpg'))?.equals(content)).toBe(true);
    await store.ping();
  });

  it('answers null for missing blobs, deletes, and refuses oversize bodies', async () => {
    expect(await store.get('t_1/none')).toBeNull();
    expect(await store.head('t_1/none')).toBeNull();
    await store.put('t_1/x', Buffer.from('x'), { contentType: 'text/plain' });
    await store.delete('t_1/x');
    expect(await store.getBuffer('t_1/x')).toBeNull();
    await expect(store.put('t_1/big', Buffer.alloc(2048), { contentType: 'x', maxBytes: 1024 })).rejects.toBeInstanceOf(
      BlobTooLargeError,
    );
    expect(await store.head('t_1/big')).toBeNull();
  });

  it('streams a body larger than a part as a multipart upload, and refuses one past the limit mid-stream with nothing stored', async () => {
    const parted = new S3BlobStore({ bucket: 'cairn-test', prefix: 'parts/', client, partBytes: 5 * 1024 * 1024 });
    const content = Buffer.alloc(12 * 1024 * 1024 + 17);
    for (let i = 0; i < content.length; i += 4096) content[i] = i % 251;
    const info = await parted.put('t_1/uploads/big', chunked(content), {
      contentType: 'application/octet-stream',
      maxBytes: content.length,
    });
    expect(info).toEqual({
      key: 't_1/uploads/big',
      size: content.length,
      sha256: createHash('sha256').update(content).digest('hex'),
      contentType: 'application/octet-stream',
    });
    expect((await parted.getBuffer('t_1/uploads/big'))?.equals(content)).toBe(true);
    expect((await parted.head('t_1/uploads/big'))?.size).toBe(content.length);

    await expect(
      parted.put('t_1/uploads/over', chunked(content), { contentType: 'x', maxBytes: content.length - 1 }),
    ).rejects.toBeInstanceOf(BlobTooLargeError);
    expect(await parted.head('t_1/uploads/over')).toBeNull();
  });

  it('a source stream that fails after some parts stores nothing and rejects with its error', async () => {
    const parted = new S3BlobStore({ bucket: 'cairn-test', prefix: 'parts/', client, partBytes: 5 * 1024 * 1024 });
    async function* broken(): AsyncGenerator<Buffer> {
      for (let i = 0; i < 3; i += 1) yield Buffer.alloc(4 * 1024 * 1024, i);
      throw new Error('client went away');
    }
    await expect(parted.put('t_1/uploads/broken', Readable.from(broken()), { contentType: 'x' })).rejects.toThrow(
      'client went away',
    );
    expect(await parted.head('t_1/uploads/broken')).toBeNull();
  });

  it('is what BLOB_STORE_URL=s3://bucket/prefix selects', () => {
    expect(createBlobStore('s3://cairn-blobs/tenant-data', { S3_ENDPOINT: 'http://127.0.0.1:9000' }).kind).toBe('s3');
    expect(() => createBlobStore('ftp://x/y')).toThrow(/file:\/\/ or s3:\/\//);
  });
});
