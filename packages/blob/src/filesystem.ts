import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readFile, rename, rm, stat, statfs, writeFile, access } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { randomBytes } from 'node:crypto';
import { MeasuringStream } from './measure.js';
import { assertBlobKey, type BlobInfo, type BlobStore, type PutOptions } from './store.js';

/**
 * The embedded default: blobs as files under `root`, each with a small JSON sidecar. Writes go to a
 * temporary file renamed into place, so a reader never sees half a blob.
 */
export class FilesystemBlobStore implements BlobStore {
  readonly kind = 'filesystem' as const;

  constructor(private readonly root: string) {}

  private path(key: string): string {
    assertBlobKey(key);
    return join(this.root, key);
  }

  async put(key: string, body: Readable | Buffer, options: PutOptions): Promise<BlobInfo> {
    const target = this.path(key);
    await mkdir(dirname(target), { recursive: true });
    const temp = `${target}.${randomBytes(6).toString('hex')}.partial`;
    const meter = new MeasuringStream(options.maxBytes);
    try {
      await pipeline(
        Buffer.isBuffer(body) ? Readable.from([body]) : body,
        meter,
        createWriteStream(temp, { flags: 'wx' }),
      );
      const info: BlobInfo = { key, size: meter.size, sha256: meter.digest(), contentType: options.contentType };
      await writeFile(`${temp}.meta`, JSON.stringify(info));
      await rename(`${temp}.meta`, `${target}.meta`);
      await rename(temp, target);
      return info;
    } catch (error) {
      await rm(temp, { force: true });
      await rm(`${temp}.meta`, { force: true });
      throw error;
    }
  }

  async get(key: string): Promise<Readable | null> {
    const path = this.path(key);
    return (await exists(path)) ? createReadStream(path) : null;
  }

  async getBuffer(key: string): Promise<Buffer | null> {
    return readFile(this.path(key)).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return null;
      throw error;
    });
  }

  async head(key: string): Promise<BlobInfo | null> {
    const path = this.path(key);
    try {
      return JSON.parse(await readFile(`${path}.meta`, 'utf8')) as BlobInfo;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error;
      const stats = await stat(path).catch((missing: unknown) => {
        if ((missing as NodeJS.ErrnoException).code === 'ENOENT') return null;
        throw missing;
      });
      return stats ? { key, size: stats.size, sha256: '', contentType: 'application/octet-stream' } : null;
    }
  }

  async delete(key: string): Promise<void> {
    const path = this.path(key);
    await rm(path, { force: true });
    await rm(`${path}.meta`, { force: true });
  }

  async freeBytes(): Promise<number> {
    await mkdir(this.root, { recursive: true });
    const fs = await statfs(this.root);
    return fs.bavail * fs.bsize;
  }

  async ping(): Promise<void> {
    await mkdir(this.root, { recursive: true });
    await access(this.root);
  }
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}
