import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
  type CompletedPart,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { MeasuringStream } from './measure.js';
import { assertBlobKey, type BlobInfo, type BlobStore, type PutOptions } from './store.js';

export interface S3BlobStoreOptions {
  bucket: string;
  prefix?: string;
  client?: S3Client;
  clientConfig?: S3ClientConfig;
  /** Bytes per multipart part (S3's minimum is 5 MiB for every part but the last); default 8 MiB. */
  partBytes?: number;
}

const DEFAULT_PART_BYTES = 8 * 1024 * 1024;

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

  /**
   * Streams the body into S3 without holding it: bodies up to one part go up in a single PutObject, larger ones
   * as a multipart upload, one part buffered at a time (reading pauses while a part is sent, so memory is about
   * one part whatever the body's size). A failure, including the size cap, aborts the multipart upload so no
   * partial object or orphaned parts remain.
   */
  async put(key: string, body: Readable | Buffer, options: PutOptions): Promise<BlobInfo> {
    const objectKey = this.objectKey(key);
    const partBytes = this.options.partBytes ?? DEFAULT_PART_BYTES;
    const meter = new MeasuringStream(options.maxBytes);
    const source = Buffer.isBuffer(body) ? Readable.from([body]) : body;
    let uploadId: string | undefined;
    const parts: CompletedPart[] = [];
    let pending: Buffer[] = [];
    let pendingBytes = 0;
    const sendPart = async (content: Buffer) => {
      uploadId ??= (
        await this.client.send(
          new CreateMultipartUploadCommand({
            Bucket: this.options.bucket,
            Key: objectKey,
            ContentType: options.contentType,
          }),
        )
      ).UploadId;
      if (!uploadId) throw new Error('S3 CreateMultipartUpload answered no UploadId');
      const partNumber = parts.length + 1;
      const sent = await this.client.send(
        new UploadPartCommand({
          Bucket: this.options.bucket,
          Key: objectKey,
          UploadId: uploadId,
          PartNumber: partNumber,
          Body: content,
          ContentLength: content.length,
        }),
      );
      parts.push({ PartNumber: partNumber, ETag: sent.ETag });
    };
    try {
      await pipeline(source, meter, async (chunks: AsyncIterable<Buffer>) => {
        for await (const chunk of chunks) {
          pending.push(chunk);
          pendingBytes += chunk.length;
          while (pendingBytes >= partBytes) {
            const joined = Buffer.concat(pending);
            await sendPart(joined.subarray(0, partBytes));
            const rest = joined.subarray(partBytes);
            pending = rest.length > 0 ? [rest] : [];
            pendingBytes = rest.length;
          }
        }
      });
      const sha256 = meter.digest();
      const last = Buffer.concat(pending);
      pending = [];
      if (uploadId === undefined) {
        // The sha256 rides as metadata only here: a multipart upload's metadata is fixed before its hash is known.
        await this.client.send(
          new PutObjectCommand({
            Bucket: this.options.bucket,
            Key: objectKey,
            Body: last,
            ContentType: options.contentType,
            ContentLength: last.length,
            Metadata: { sha256 },
          }),
        );
      } else {
        if (last.length > 0) await sendPart(last);
        await this.client.send(
          new CompleteMultipartUploadCommand({
            Bucket: this.options.bucket,
            Key: objectKey,
            UploadId: uploadId,
            MultipartUpload: { Parts: parts },
          }),
        );
      }
      return { key, size: meter.size, sha256, contentType: options.contentType };
    } catch (error) {
      if (uploadId !== undefined) {
        await this.client
          .send(new AbortMultipartUploadCommand({ Bucket: this.options.bucket, Key: objectKey, UploadId: uploadId }))
          // Best effort: the upload's own error is the one the caller needs; an upload left unaborted holds no
          // visible object (a bucket lifecycle rule reclaims its parts).
          .catch(() => undefined);
      }
      throw error;
    }
  }

  async get(key: string): Promise<Readable | null> {
    try {
      const object = await this.client.send(
        new GetObjectCommand({ Bucket: this.options.bucket, Key: this.objectKey(key) }),
      );
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
      const object = await this.client.send(
        new HeadObjectCommand({ Bucket: this.options.bucket, Key: this.objectKey(key) }),
      );
      return {
        key,
        size: object.ContentLength ?? 0,
        sha256: object.Metadata?.sha256 ?? '',
        contentType: object.ContentType ?? 'application/octet-stream',
      };
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
  }

  async delete(key: string): Promise<void> {
    await this.client.send(new DeleteObjectCommand({ Bucket: this.options.bucket, Key: this.objectKey(key) }));
  }

  async presignPut(
    key: string,
    options: { size: number; contentType?: string; expiresInSeconds: number },
  ): Promise<string> {
    const command = new PutObjectCommand({
      Bucket: this.options.bucket,
      Key: this.objectKey(key),
      ContentLength: options.size,
      ...(options.contentType ? { ContentType: options.contentType } : {}),
    });
    // Content-Length is signed, so S3 refuses a body of any other size: the declared size is the object's size.
    return getSignedUrl(this.client, command, {
      expiresIn: options.expiresInSeconds,
      signableHeaders: new Set(['content-length', ...(options.contentType ? ['content-type'] : [])]),
    });
  }

  async ping(): Promise<void> {
    await this.client.send(new HeadBucketCommand({ Bucket: this.options.bucket }));
  }
}

function isNotFound(error: unknown): boolean {
  const e = error as { name?: string; $metadata?: { httpStatusCode?: number } };
  return e?.name === 'NoSuchKey' || e?.name === 'NotFound' || e?.$metadata?.httpStatusCode === 404;
}
