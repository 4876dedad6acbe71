import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { BlobTooLargeError, createBlobStore, type BlobStore } from '../src/index.js';

let root: string;
let store: BlobStore;

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'cairn-blobs-'));
  store = createBlobStore(`file://${root}`);
});
afterAll(() => rm(root, { recursive: true, force: true }));

describe('FilesystemBlobStore', () => {
  it('streams a blob in, measuring size and SHA-256, and back out', async () => {
    const content = Buffer.alloc(3 * 1024 * 1024 + 17, 7);
    const info = await store.put('t_1/uploads/u1', Readable.from([content.subarray(0, 1000), content.subarray(1000)]), {
      contentType: 'image/png',
    });
    expect(info).toEqual({
      key: 't_1/uploads/u1',
      size: content.length,
      sha256: createHash('sha256').update(content).digest('hex'),
      contentType: 'image/png',
    });
    expect((await store.getBuffer('t_1/uploads/u1'))?.equals(content)).toBe(true);
    expect(await store.head('t_1/uploads/u1')).toEqual(info);
  });

  it('refuses a blob past maxBytes and leaves nothing behind', async () => {
    await expect(
      store.put('t_1/uploads/big', Buffer.alloc(2048), { contentType: 'x', maxBytes: 1024 }),
    ).rejects.toBeInstanceOf(BlobTooLargeError);
    expect(await store.head('t_1/uploads/big')).toBeNull();
    expect((await readdir(join(root, 't_1', 'uploads'))).filter((f) => f.includes('partial'))).toEqual([]);
  });

  it('answers null for a missing blob and deletes', async () => {
    expect(await store.get('t_1/nothing')).toBeNull();
    await store.put('t_1/x', Buffer.from('x'), { contentType: 'text/plain' });
    await store.delete('t_1/x');
    expect(await store.getBuffer('t_1/x')).toBeNull();
  });

  it.each(['../etc/passwd', '/abs', 't/../../x', 'a//b', ''])('refuses the key %j', async (key) => {
    await expect(store.put(key, Buffer.from('x'), { contentType: 'x' })).rejects.toThrow(/invalid blob key/);
  });
});
