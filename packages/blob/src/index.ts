import { FilesystemBlobStore } from './filesystem.js';
import { S3BlobStore } from './s3.js';
import type { BlobStore } from './store.js';

export { FilesystemBlobStore } from './filesystem.js';
export { S3BlobStore, type S3BlobStoreOptions } from './s3.js';
export { BlobTooLargeError, assertBlobKey, type BlobInfo, type BlobStore, type PutOptions } from './store.js';
export { MeasuringStream } from './measure.js';
export { blobKeyOf, blobKeys, parseBlobKey, PUBLIC_OWNER, type BlobKeyKind, type ParsedBlobKey } from './keys.js';

/**
 * `BLOB_STORE_URL`: `file:///var/lib/cairn/blobs` (the embedded default) or `s3://bucket/prefix` (with the
 * usual AWS environment; `S3_ENDPOINT` for MinIO or another S3-compatible server).
 */
export function createBlobStore(url: string, env: NodeJS.ProcessEnv = process.env): BlobStore {
  const parsed = new URL(url);
  if (parsed.protocol === 'file:') return new FilesystemBlobStore(decodeURIComponent(parsed.pathname));
  if (parsed.protocol === 's3:') {
    const prefix = parsed.pathname.replace(/^\//, '');
    return new S3BlobStore({
      bucket: parsed.hostname,
      prefix: prefix && !prefix.endsWith('/') ? `${prefix}/` : prefix,
      clientConfig: {
        ...(env.S3_ENDPOINT
          ? { endpoint: env.S3_ENDPOINT, forcePathStyle: true, region: env.AWS_REGION ?? 'us-east-1' }
          : {}),
        // Keys given in the service's environment win; without them the SDK's default chain (instance role, ...).
        ...(env.AWS_ACCESS_KEY_ID && env.AWS_SECRET_ACCESS_KEY
          ? { credentials: { accessKeyId: env.AWS_ACCESS_KEY_ID, secretAccessKey: env.AWS_SECRET_ACCESS_KEY } }
          : {}),
      },
    });
  }
  throw new Error(`BLOB_STORE_URL must be file:// or s3:// (got ${parsed.protocol})`);
}
