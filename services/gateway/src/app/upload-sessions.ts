import { Readable } from 'node:stream';
import { isPlanName, PLANS, type PlanName } from '@cairn/catalog';
import { BlobTooLargeError, blobKeys, type BlobInfo, type BlobStore } from '@cairn/blob';
import { publicUrl } from '@cairn/config';
import { CairnError } from '@cairn/errors';
import { newId } from '@cairn/ids';
import type { Logger } from '@cairn/logging';
import { every } from '@cairn/runtime';
import { SNIFF_BYTES, sniffMediaType } from '@cairn/sniff';
import type { UploadUrlSigner } from '../domain/upload-url.js';
import type { UploadSessionRecords, UploadSessionRow } from './ports.js';
import { uploadHead } from './upload-head.js';

/** A request's upload in the blob store: a multipart file part, or an upload session's file named by upload_id. */
export interface StoredUpload extends BlobInfo {
  fieldname: string;
  originalname: string;
  /** Its first bytes (SNIFF_BYTES) as this request streamed it into the blob store; absent for a session's upload. */
  head?: Buffer;
  /**
   * A session an earlier request already used (take's `describeSpent`): its size and hash as that request saw them,
   * so an idempotent retry can find its recorded answer, but no file to use: the blob belongs to that request.
   */
  spent?: true;
}

export interface UploadSessionAnswer {
  upload_id: string;
  upload_url: string;
  method: 'PUT';
  expires_at: string;
  max_bytes: number;
}

/**
 * Upload sessions: files above the direct upload limit (up to UPLOAD_SESSION_MAX_BYTES) go straight to the blob
 * store by PUT (a presigned S3 URL, or the gateway's own signed URL on the filesystem store), and a sign or verify
 * then names them by upload_id, once.
 */
export class UploadSessions {
  constructor(
    private readonly deps: {
      store: UploadSessionRecords;
      blobs: BlobStore;
      urls: UploadUrlSigner;
      publicBaseUrl: string;
      /** UPLOAD_SESSION_MAX_BYTES: no plan's session takes more. */
      maxBytes: number;
      /** UPLOAD_MAX_BYTES, the direct upload limit: a plan whose sessions take no more than a direct upload. */
      directMaxBytes: number;
      /** UPLOAD_MIN_FREE_BYTES: on the filesystem store, a session whose file would leave less free is refused. */
      minFreeBytes: number;
      ttlSeconds: number;
      logger: Logger;
    },
  ) {}

  /** The largest file a session of `plan` takes. */
  maxSessionBytes(plan: PlanName): number {
    const planMax = PLANS[plan].uploads.maxSessionBytes;
    return Math.min(planMax === 'direct' ? this.deps.directMaxBytes : planMax, this.deps.maxBytes);
  }

  async create(
    tenant: { tenantId: string; plan: string },
    request: { size: number; filename?: string; content_type?: string },
  ): Promise<UploadSessionAnswer> {
    const { tenantId } = tenant;
    // A plan name this gateway does not know yet gets the narrowest limits rather than none.
    const plan: PlanName = isPlanName(tenant.plan) ? tenant.plan : 'free';
    const maxBytes = this.maxSessionBytes(plan);
    if (request.size > maxBytes)
      throw new CairnError(
        'cairn.upload.too_large',
        `An upload session on the ${plan} plan takes files up to ${maxBytes} bytes; this one declares ${request.size}.`,
      );
    await this.assertRoomFor(request.size);
    const uploadId = newId('upload');
    const limits = PLANS[plan].uploads;
    const outcome = await this.deps.store.create(
      {
        uploadId,
        tenantId,
        blobKey: blobKeys.upload(tenantId, uploadId),
        declaredSize: request.size,
        ttlSeconds: this.deps.ttlSeconds,
        ...(request.filename ? { filename: request.filename } : {}),
        ...(request.content_type ? { contentType: request.content_type } : {}),
      },
      { maxOpen: limits.maxOpenSessions, maxOutstandingBytes: limits.maxOutstandingBytes },
    );
    if ('refused' in outcome)
      throw new CairnError(
        'cairn.upload.quota_exceeded',
        outcome.refused === 'sessions'
          ? `The ${plan} plan keeps at most ${limits.maxOpenSessions} upload sessions open; ${outcome.open} are. Use or let one expire first.`
          : `The ${plan} plan's open upload sessions may declare ${limits.maxOutstandingBytes} bytes together; ${outcome.outstandingBytes} are declared and this one asks ${request.size} more.`,
      );
    const row = outcome.created;
    const expiresUnix = Math.floor(row.expiresAt.getTime() / 1000);
    const presign = this.deps.blobs.presignPut?.bind(this.deps.blobs);
    const uploadUrl = presign
      ? await presign(row.blobKey, { size: request.size, expiresInSeconds: this.deps.ttlSeconds })
      : publicUrl(
          this.deps.publicBaseUrl,
          `/v1/uploads/${uploadId}/content?expires=${expiresUnix}&signature=${this.deps.urls.sign(uploadId, expiresUnix)}`,
        );
    return {
      upload_id: uploadId,
      upload_url: uploadUrl,
      method: 'PUT',
      expires_at: row.expiresAt.toISOString(),
      max_bytes: request.size,
    };
  }

  /**
   * The filesystem store's PUT: the signed URL is the credential. The body streams into the blob store held to the
   * declared size (413 past it, the partial file removed); a body of a type Cairn does not know is refused (415)
   * and removed. Either failure leaves the session pending, so the client may PUT again.
   */
  async receive(
    uploadId: string,
    query: { expires: string; signature: string },
    body: Readable,
    contentLength: number | undefined,
  ): Promise<void> {
    if (
      !/^up_[0-9A-HJKMNP-TV-Z]{26}$/.test(uploadId) ||
      !this.deps.urls.verify(uploadId, query.expires, query.signature, Date.now() / 1000)
    ) {
      throw new CairnError('cairn.upload.invalid_url', 'This upload URL is not valid (altered, or past its expiry).');
    }
    const session = await this.deps.store.byId(uploadId);
    if (!session || session.expired || session.state === 'expired')
      throw new CairnError('cairn.upload.invalid_url', 'This upload session has expired.');
    if (contentLength !== undefined && contentLength > session.declaredSize) {
      throw new CairnError(
        'cairn.upload.too_large',
        `This session was declared for ${session.declaredSize} bytes; the body is ${contentLength}.`,
      );
    }
    if (!(await this.deps.store.transition(uploadId, ['pending'], 'receiving'))) {
      throw new CairnError(
        'cairn.upload.already_uploaded',
        'This session already received its file (or is receiving it); create a new session for another upload.',
      );
    }
    let kept = false;
    try {
      await this.assertRoomFor(session.declaredSize);
      // The type is read from the first bytes before anything is stored: bytes of no known type are not kept at all.
      const { head, stream } = await splitHead(body, SNIFF_BYTES);
      if (!sniffMediaType(head))
        throw new CairnError(
          'cairn.verify.unsupported_file_type',
          'The uploaded file is of no type Cairn signs or verifies (read from its first bytes).',
        );
      let info;
      try {
        info = await this.deps.blobs.put(session.blobKey, stream, {
          contentType: 'application/octet-stream',
          maxBytes: session.declaredSize,
        });
      } catch (error) {
        if (error instanceof BlobTooLargeError)
          throw new CairnError(
            'cairn.upload.too_large',
            `This session was declared for ${session.declaredSize} bytes; the body is larger.`,
          );
        throw error;
      }
      kept = await this.deps.store.transition(uploadId, ['receiving'], 'uploaded', {
        size: info.size,
        sha256: info.sha256,
      });
      if (!kept)
        throw new CairnError(
          'cairn.upload.invalid_url',
          'This upload session expired while the file was being received.',
        );
    } finally {
      if (!kept) {
        // Best effort: the expiry sweep deletes an unused session's file if this delete fails.
        await this.deps.blobs.delete(session.blobKey).catch(() => undefined);
        await this.deps.store.transition(uploadId, ['receiving'], 'pending').catch(() => false);
      }
    }
  }

  /**
   * A sign's or verify's `upload_id`: the caller's tenant's session, uploaded, unexpired and unused, becomes the
   * request's upload and is marked used (the consumer deletes the file afterwards). On S3 the PUT never passed
   * through Cairn, so the session is confirmed here by a HEAD (the object must be there at the declared size).
   * With `describeSpent`, a session already used is described instead of refused (StoredUpload.spent): a sign
   * retried with its Idempotency-Key answers what the first one recorded.
   */
  async take(tenantId: string, uploadId: string, options: { describeSpent?: boolean } = {}): Promise<StoredUpload> {
    const notFound = new CairnError('cairn.not_found', `No upload ${uploadId} in this tenant.`);
    if (!/^up_[0-9A-HJKMNP-TV-Z]{26}$/.test(uploadId)) throw notFound;
    const session = await this.deps.store.forTenant(tenantId, uploadId);
    if (!session) throw notFound;
    if (options.describeSpent && session.state === 'used')
      return { ...this.describe(session, session.size ?? 0, session.sha256 ?? ''), spent: true };
    this.assertUsable(session);
    let size = session.size ?? 0;
    let sha256 = session.sha256 ?? '';
    if (session.state === 'pending' && this.deps.blobs.presignPut) {
      const head = await this.deps.blobs.head(session.blobKey);
      if (!head)
        throw new CairnError(
          'cairn.upload.not_uploaded',
          `Upload ${uploadId} has not received its file yet: PUT it to the session's upload_url first.`,
        );
      if (head.size !== session.declaredSize) {
        await this.deps.blobs.delete(session.blobKey).catch(() => undefined); // the expiry sweep retries it
        throw new CairnError(
          'cairn.upload.too_large',
          `Upload ${uploadId} holds ${head.size} bytes, not the ${session.declaredSize} declared.`,
        );
      }
      await this.assertKnownType(session.blobKey);
      size = head.size;
      sha256 = head.sha256;
    } else if (session.state !== 'uploaded') {
      throw new CairnError(
        'cairn.upload.not_uploaded',
        `Upload ${uploadId} has not received its file yet: PUT it to the session's upload_url first.`,
      );
    }
    // Size and hash are kept with the used session, so a retry of the same request is described as this one was.
    if (!(await this.deps.store.transition(uploadId, ['pending', 'uploaded'], 'used', { size, sha256 }))) {
      // Lost a race (another request took it, or it expired just now): answer what it is now.
      const now = await this.deps.store.forTenant(tenantId, uploadId);
      if (now) this.assertUsable(now);
      throw new CairnError('cairn.upload.already_used', `Upload ${uploadId} was already used.`);
    }
    return this.describe(session, size, sha256);
  }

  private describe(session: UploadSessionRow, size: number, sha256: string): StoredUpload {
    return {
      key: session.blobKey,
      size,
      // The presigned PUT carried no hash: the request hash of an idempotent sign then binds the session instead.
      sha256: sha256 || `upload:${session.uploadId}`,
      contentType: 'application/octet-stream',
      fieldname: 'upload_id',
      originalname: session.uploadId,
    };
  }

  /** Deletes the files of sessions past their expiry (runs every `intervalMs` and once at start); returns stop. */
  startSweep(intervalMs: number): () => Promise<void> {
    return every(
      intervalMs,
      async () => {
        const keys = await this.deps.store.expireDue();
        for (const key of keys)
          await this.deps.blobs
            .delete(key)
            .catch((error: unknown) => this.deps.logger.warn({ err: error, key }, 'expired upload not deleted'));
        if (keys.length > 0) this.deps.logger.info({ uploads: keys.length }, 'expired upload sessions deleted');
      },
      (error: unknown) => this.deps.logger.warn({ err: error }, 'upload session sweep failed; will retry'),
    );
  }

  private assertUsable(session: UploadSessionRow): void {
    if (session.state === 'used')
      throw new CairnError(
        'cairn.upload.already_used',
        `Upload ${session.uploadId} was already used; an upload is signed or verified once.`,
      );
    if (session.state === 'expired' || session.expired)
      throw new CairnError(
        'cairn.upload.expired',
        `Upload ${session.uploadId} expired at ${session.expiresAt.toISOString()}.`,
      );
  }

  /** Refuses (507) a file the filesystem store could keep only by eating into UPLOAD_MIN_FREE_BYTES. */
  private async assertRoomFor(bytes: number): Promise<void> {
    const free = await this.deps.blobs.freeBytes?.();
    if (free !== undefined && free - bytes < this.deps.minFreeBytes)
      throw new CairnError(
        'cairn.upload.insufficient_storage',
        'Cairn cannot take a file of this size right now; retry later, or upload a smaller file.',
      );
  }

  /** The hostile-input rule for uploads: the type is read from the bytes, and bytes of no known type go no further. */
  private async assertKnownType(blobKey: string): Promise<void> {
    const head = await uploadHead(this.deps.blobs, blobKey);
    if (!head || !sniffMediaType(head))
      throw new CairnError(
        'cairn.verify.unsupported_file_type',
        'The uploaded file is of no type Cairn signs or verifies (read from its bytes).',
      );
  }
}

/** The first `bytes` of a stream (fewer if it ends sooner) and a stream of the whole, head included, read once. */
async function splitHead(body: Readable, bytes: number): Promise<{ head: Buffer; stream: Readable }> {
  const iterator = (body as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
  const chunks: Buffer[] = [];
  let size = 0;
  while (size < bytes) {
    const next = await iterator.next();
    if (next.done) break;
    chunks.push(next.value);
    size += next.value.length;
  }
  const first = Buffer.concat(chunks);
  async function* whole(): AsyncGenerator<Buffer> {
    if (first.length > 0) yield first;
    for (let next = await iterator.next(); !next.done; next = await iterator.next()) yield next.value;
  }
  return { head: first.subarray(0, bytes), stream: Readable.from(whole(), { objectMode: false }) };
}
