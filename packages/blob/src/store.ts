import type { Readable } from 'node:stream';

export interface BlobInfo {
  key: string;
  size: number;
  /**
   * Hex SHA-256 of the content, computed while it was written. `put` always answers it; `head` answers '' when
   * the store kept no record of it (an S3 object written in parts, whose metadata is fixed before the hash is known).
   */
  sha256: string;
  contentType: string;
}

/** How a blob is written: its content type, and the most bytes it may have. */
export interface PutOptions {
  contentType: string;
  maxBytes?: number;
}

/**
 * Where uploads, derived assets and manifests live. Keys are opaque paths chosen by the owner
 * (`<tenant>/<kind>/<id>`); retention is the owner's job (it knows when an asset expires).
 */
export interface BlobStore {
  readonly kind: 'filesystem' | 's3';
  /**
   * Writes a blob from a stream or buffer without holding a stream whole (S3: multipart, one part in memory);
   * refuses more than `maxBytes` while streaming (the partial write is removed).
   */
  put(key: string, body: Readable | Buffer, options: PutOptions): Promise<BlobInfo>;
  /** The content as a stream, or null when absent. */
  get(key: string): Promise<Readable | null>;
  getBuffer(key: string): Promise<Buffer | null>;
  head(key: string): Promise<BlobInfo | null>;
  delete(key: string): Promise<void>;
  /**
   * S3 only: a presigned PUT URL for `key` that takes exactly `size` bytes (Content-Length is signed), valid for
   * `expiresInSeconds`. The filesystem store has none: its uploads come through the service itself.
   */
  presignPut?(key: string, options: { size: number; contentType?: string; expiresInSeconds: number }): Promise<string>;
  /** Filesystem only: bytes still free to an unprivileged writer where blobs are kept (S3 has no such bound). */
  freeBytes?(): Promise<number>;
  ping(): Promise<void>;
}

export class BlobTooLargeError extends Error {
  constructor(readonly maxBytes: number) {
    super(`blob larger than ${maxBytes} bytes`);
    this.name = 'BlobTooLargeError';
  }
}

/** Keys are `[A-Za-z0-9_.-]` segments joined by `/`: no traversal, no absolute paths. */
export function assertBlobKey(key: string): void {
  if (!/^[A-Za-z0-9_.-]+(\/[A-Za-z0-9_.-]+)*$/.test(key) || key.split('/').some((s) => s === '.' || s === '..')) {
    throw new Error(`invalid blob key: ${key}`);
  }
}
