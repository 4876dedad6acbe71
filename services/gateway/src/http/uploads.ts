import { Transform, type Readable, type TransformCallback } from 'node:stream';
import type { NextFunction, Request, RequestHandler } from 'express';
import multer, { type StorageEngine } from 'multer';
import { BlobTooLargeError, blobKeys, PUBLIC_OWNER, type BlobInfo, type BlobStore, type PutOptions } from '@cairn/blob';
import { SNIFF_BYTES } from '@cairn/sniff';
import { CairnError, type ErrorCode } from '@cairn/errors';
import { newId } from '@cairn/ids';
import { inSpan } from '@cairn/telemetry';
import type { StoredUpload, UploadSessions } from '../app/upload-sessions.js';

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace
  namespace Express {
    interface Request {
      upload?: StoredUpload;
    }
  }
}

/** Passes bytes through unchanged and keeps the first SNIFF_BYTES of them. */
class HeadTap extends Transform {
  private readonly kept: Buffer[] = [];
  private keptBytes = 0;

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    if (this.keptBytes < SNIFF_BYTES) {
      const part = chunk.subarray(0, SNIFF_BYTES - this.keptBytes);
      this.kept.push(Buffer.from(part));
      this.keptBytes += part.length;
    }
    callback(null, chunk);
  }

  get head(): Buffer {
    return Buffer.concat(this.kept);
  }
}

/**
 * Streams an upload into the blob store and answers what was stored with its first bytes (`head`, what its media
 * type is sniffed from), so the request's later steps need not read the blob back for them.
 */
export async function storeUpload(
  blobs: BlobStore,
  key: string,
  body: Readable,
  options: PutOptions,
): Promise<BlobInfo & { head: Buffer }> {
  const tap = new HeadTap();
  body.on('error', (error) => tap.destroy(error));
  try {
    const info = await blobs.put(key, body.pipe(tap), options);
    return { ...info, head: tap.head };
  } catch (error) {
    // As when the store read the body itself: a refused or failed upload is not read any further.
    body.unpipe(tap);
    body.destroy();
    throw error;
  }
}

/**
 * A multer storage engine that streams the file part straight into the blob store, hashing and counting on
 * the way: the upload is never held whole in memory, and a file past the limit is cut off and removed.
 */
class BlobStorage implements StorageEngine {
  constructor(
    private readonly blobs: BlobStore,
    private readonly maxBytes: number,
  ) {}

  _handleFile(
    req: Request,
    file: Express.Multer.File,
    callback: (error?: unknown, info?: Partial<Express.Multer.File>) => void,
  ): void {
    const key = blobKeys.upload(req.auth?.tenant.tenantId ?? PUBLIC_OWNER, newId('request').slice(4));
    storeUpload(this.blobs, key, file.stream, {
      contentType: 'application/octet-stream',
      maxBytes: this.maxBytes,
    }).then(
      (info) => {
        req.upload = { ...info, fieldname: file.fieldname, originalname: file.originalname };
        callback(null, { size: info.size, path: key });
      },
      (error: unknown) => {
        file.stream.resume();
        callback(error);
      },
    );
  }

  _removeFile(
    _req: Request,
    file: Express.Multer.File & { path?: string },
    callback: (error: Error | null) => void,
  ): void {
    if (!file.path) return callback(null);
    this.blobs.delete(file.path).then(
      () => callback(null),
      (error: Error) => callback(error),
    );
  }
}

export interface SingleUploadOptions {
  blobs: BlobStore;
  field: string;
  maxBytes: number;
  tooLarge: ErrorCode;
  /**
   * Checks the text fields that arrived before the file part (throw a CairnError to refuse): a request refused
   * here is answered before any byte of its file is stored. Fields sent after the file are the route's to check.
   */
  checkFieldsBeforeFile?: (fields: Record<string, unknown>) => void;
  /**
   * When given, a request with no file part may name an upload session in the text field `upload_id` instead
   * (POST /v1/uploads): the caller's tenant's uploaded, unused session becomes `req.upload` and is used up.
   */
  sessions?: UploadSessions;
  /** With sessions: a session already used becomes a `spent` req.upload instead of a refusal (an idempotent retry). */
  describeSpentSessions?: boolean;
}

/**
 * Multipart parsing for one file field plus small text fields. Limits and malformed bodies become
 * Problem+JSON: `tooLarge` names the code for an oversize file (sign and verify differ).
 */
export function singleUpload(options: SingleUploadOptions): RequestHandler {
  const upload = multer({
    storage: new BlobStorage(options.blobs, options.maxBytes),
    limits: { fileSize: options.maxBytes, files: 1, fields: 10, fieldSize: 64 * 1024, parts: 12 },
    fileFilter: (req, _file, accept) => {
      try {
        options.checkFieldsBeforeFile?.((req.body ?? {}) as Record<string, unknown>);
        accept(null, true);
      } catch (error) {
        accept(error as Error);
      }
    },
  }).single(options.field);
  // The multipart parse and the file's streaming into the blob store, timed as one span (gateway.upload).
  const parse = (req: Request, res: Parameters<RequestHandler>[1]) =>
    inSpan(
      'gateway.upload',
      () => new Promise<unknown>((resolve) => upload(req, res, (error: unknown) => resolve(error ?? undefined))),
    );
  return (req, res, next) => {
    void parse(req, res).then((error: unknown) =>
      error ? next(uploadProblem(error, options)) : takeNamedSession(req, options, next),
    );
  };
}

/** After a parse without a file part: the upload session named in `upload_id`, when the route takes them. */
function takeNamedSession(req: Request, options: SingleUploadOptions, next: NextFunction): void {
  const uploadId = (req.body as Record<string, unknown> | undefined)?.upload_id;
  if (!options.sessions || uploadId === undefined) return next();
  if (req.upload)
    return next(
      new CairnError(
        'cairn.validation.invalid_body',
        `Send either the file (field "${options.field}") or upload_id, not both.`,
      ),
    );
  if (typeof uploadId !== 'string')
    return next(new CairnError('cairn.validation.invalid_body', 'upload_id must be a single text field.'));
  if (!req.auth)
    return next(
      new CairnError(
        'cairn.auth.invalid_key',
        'Naming an upload_id needs an API key of the tenant that created the upload session.',
      ),
    );
  const sessions = options.sessions;
  const tenantId = req.auth.tenant.tenantId;
  // The fields are checked before the session is used up: a refusable request must not cost the upload.
  Promise.resolve()
    .then(() => options.checkFieldsBeforeFile?.((req.body ?? {}) as Record<string, unknown>))
    .then(() => sessions.take(tenantId, uploadId, { describeSpent: options.describeSpentSessions === true }))
    .then((taken) => {
      req.upload = taken;
      next();
    }, next);
}

/**
 * singleUpload for a multipart body, its options chosen per request; any other body passes on untouched (the route
 * reads it as JSON).
 */
export function fileIfMultipart(options: (req: Request) => SingleUploadOptions): RequestHandler {
  return (req, res, next) => (req.is('multipart/form-data') ? singleUpload(options(req))(req, res, next) : next());
}

/** A failed multipart parse as the problem it answers (an error it does not recognise passes on unchanged). */
function uploadProblem(error: unknown, options: SingleUploadOptions): unknown {
  const tooLarge = () =>
    new CairnError(
      options.tooLarge,
      `The file is larger than the ${Math.round(options.maxBytes / (1024 * 1024))} MB upload limit.`,
    );
  if (error instanceof CairnError) return error;
  if (error instanceof BlobTooLargeError) return tooLarge();
  if (error instanceof multer.MulterError) {
    if (error.code === 'LIMIT_FILE_SIZE') return tooLarge();
    if (error.code === 'LIMIT_UNEXPECTED_FILE')
      return new CairnError(
        'cairn.validation.invalid_body',
        `Send the file in the multipart field "${options.field}" (one file only).`,
      );
    return new CairnError('cairn.validation.invalid_body', `Malformed multipart body: ${error.message}.`);
  }
  const message = error instanceof Error ? error.message : '';
  if (/multipart|boundary|unexpected end|malformed/i.test(message))
    return new CairnError('cairn.validation.invalid_body', 'Malformed multipart body.');
  return error;
}

/** Removes the stored upload once the request no longer needs it (its content now lives elsewhere). */
export async function discardUpload(blobs: BlobStore, req: Request): Promise<void> {
  // Best effort: the answer does not depend on it; a failed delete leaves an unreferenced upload blob behind.
  // A spent session's file is the earlier request's, which may still be signing it.
  if (req.upload && !req.upload.spent) await blobs.delete(req.upload.key).catch(() => undefined);
}

/**
 * Runs `use` on the request's stored upload, then discards the upload (discardUpload) unless `use` handed it over
 * to work that outlives the request (a job, which deletes it when it ends).
 */
export async function withUpload<T>(
  blobs: BlobStore,
  req: Request,
  use: (handOver: () => void) => Promise<T>,
): Promise<T> {
  let handedOver = false;
  try {
    return await use(() => void (handedOver = true));
  } finally {
    if (!handedOver) await discardUpload(blobs, req);
  }
}
