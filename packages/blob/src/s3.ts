import { DeleteObjectCommand, GetObjectCommand, HeadBucketCommand, HeadObjectCommand, PutObjectCommand, S3Client, type S3ClientConfig } from '@aws-sdk/client-s3';
import { Readable } from 'node:stream';
import { MeasuringStream } from './measure.js';
import { assertBlobKey, type BlobInfo, type BlobStore } from './store.js';

export interface S3BlobStoreOptions {
  bucket: string;
  prefix?: string;
  client?: S3Client;
  clientConfig?: S3ClientConfig;
}

/**
 * Blobs in an S3-compatible bucket (AWS S3, MinIO). The body is measured and hashed on the way, and the
 * hash is kept as object metadata so `head` answers it without reading the object.
 */
export class S3BlobStore implements BlobStore {
  readonly kind = 's3' as const;
  private readonly client: S3Client;

  constructor(private readonly options: S3BlobStoreOptions) {
    this.client = options.client ?? new S3Client(options.clientConfig ?? {});
  }

  private objectKey(key: string): string {
    assertBlobKey(key);
    return `${this.options.prefix ?? ''}${key}`;
  }

  async put(key: string, body: Readable | Buffer, options: { contentType: string; maxBytes?: number }): Promise<BlobInfo> {
    // S3 needs the length up front; uploads are bounded (100 MB), so buffer through the meter.
    const meter = new MeasuringStream(options.maxBytes);
    const chunks: Buffer[] = [];
    const source = Buffer.isBuffer(body) ? Readable.from([body]) : body;
    await new Promise<void>((resolve, reject) => {
      source.on('error', reject);
      meter.on('error', reject);
      meter.on('data', (chunk: Buffer) => chunks.push(chunk));
      meter.on('end', resolve);
      source.pipe(meter);
    });
    const content = Buffer.concat(chunks);
    const sha256 = meter.digest();
    await this.client.send(
      new PutObjectCommand({ Bucket: this.options.bucket, Key: this.objectKey(key), Body: content, ContentType: options.contentType, ContentLength: content.length, Metadata: { sha256 } }),
    );
    return { key, size: content.length, sha256, contentType: options.contentType };
  }

  async get(key: string): Promise<Readable | null> {
    try {
      const object = await this.client.send(new GetObjectCommand({ Bucket: this.options.bucket, Key: this.objectKey(key) }));
      return object.Body instanceof Readable ? object.Body : null;
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
  }

  async getBuffer(key: string): Promise<Buffer | null> {
    const stream = await this.get(key);
    if (!stream) return null;
    const chunks: Buffer[] = [];
    for await (const chunk of stream) chunks.push(Buffer.from(chunk as Uint8Array));
    return Buffer.concat(chunks);
  }

  async head(key: string): Promise<BlobInfo | null> {
    try {
      const object = await this.client.send(new HeadObjectCommand({ Bucket: this.options.bucket, Key: this.objectKey(key) }));
      return { key, size: object.ContentLength ?? 0, sha256: object.Metadata?.sha256 ?? '', contentType: object.ContentType ?? 'application/octet-stream' };
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.options.bucket, Key: this.objectKey(key) }));
  }

  async ping(): Promise<void> {
    await this.client.send(new HeadBucketCommand({ Bucket: this.options.bucket }));
  }
}

function isNotFound(error: unknown): boolean {
  const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e?.name === 'NoSuchKey' || e?.name === 'NotFound' || e?.$metadata?.httpStatusCode === 404;
}
