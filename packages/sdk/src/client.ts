import type {
  ApiKey,
  AuditEntry,
  AuditPage,
  Job,
  LookupResult,
  Problem,
  SignResult,
  UploadSession,
  Usage,
  Verification,
  Webhook,
  WebhookDelivery,
} from './types.js';
import { multipartBody, rawBody, type MultipartField, type PreparedBody, type ProgressListener } from './body.js';

// Only web-platform globals here (fetch, FormData, Blob, crypto.randomUUID, setTimeout): the client runs in
// Node 20 and in browsers alike. Node-only code lives in cli.ts.

/** An answer that was not a success: the RFC 7807 problem Cairn sent, typed. */
export class CairnApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly problem: Problem;
  readonly requestId: string | undefined;

  constructor(problem: Problem) {
    super(`${problem.code}: ${problem.detail || problem.title}`);
    this.name = 'CairnApiError';
    this.status = problem.status;
    this.code = problem.code;
    this.problem = problem;
    this.requestId = problem.request_id;
  }
}

/** A file to upload: bytes or a Blob (a browser File is a Blob), with the name the server sees. */
export type FileInput = Blob | Uint8Array | ArrayBuffer;

export interface ClientOptions {
  /** e.g. https://api.example.com; no trailing path. */
  baseUrl: string;
  /** Bearer API key; optional for the public calls (verify by file or manifest_uri). */
  apiKey?: string;
  /** Retries of an answer 429 or 503 (honouring Retry-After), 3 unless set. */
  maxRetries?: number;
  /** Upper bound on one wait between retries, 30 s unless set. */
  maxRetryDelayMs?: number;
  /** A fetch to use instead of the global one (tests, proxies). */
  fetch?: typeof fetch;
  userAgent?: string;
  /**
   * Files larger than this go through an upload session (`POST /v1/uploads`, one PUT, then the call names the
   * `upload_id`) rather than inside the multipart request: 32 MiB unless set. A session takes files up to the
   * server's `UPLOAD_SESSION_MAX_BYTES` (5 GiB by default), past the multipart limit (`UPLOAD_MAX_BYTES`).
   */
  uploadSessionAboveBytes?: number;
}

/** What to sign or verify: the file itself, or an upload session already filled (`uploads.upload`). */
export type FileSource = { file: FileInput; filename?: string } | { uploadId: string };

export interface UploadOptions {
  filename?: string;
  /** Bytes sent so far; in Node as they stream, in a browser once the upload is done. */
  onUploadProgress?: ProgressListener;
}

export type SignOptions = FileSource & {
  recipe: string;
  metadata?: Record<string, unknown>;
  /** Made for you (a UUID) unless given; the same key on every retry of this call. */
  idempotencyKey?: string;
  /** A large upload answers 202 with a job: wait for it (default) or return the job as it is. */
  wait?: boolean;
  pollIntervalMs?: number;
  /** How long to wait for a job, 10 minutes unless set. */
  timeoutMs?: number;
  /** Called with the job on each poll, e.g. to show progress. */
  onJob?: (job: Job) => void;
  onUploadProgress?: ProgressListener;
};

export type VerifyInput = FileSource | { assetId: string } | { manifestUri: string };

export interface AuditQuery {
  eventType?: string;
  since?: string;
  until?: string;
  /** Entries per page (≤ 1000). */
  pageSize?: number;
  cursor?: string;
}

export interface WebhookInput {
  url: string;
  events: string[];
  description?: string;
  payload_format?: 'a' | 'b';
}

interface RequestOptions {
  method?: string;
  query?: Record<string, string | number | undefined>;
  json?: unknown;
  /** Made afresh for each attempt (a stream is read once). */
  body?: () => PreparedBody;
  headers?: Record<string, string>;
  /** Whether a 503 may be retried: true when repeating the call cannot do the work twice. */
  idempotent: boolean;
  /** Answers the caller handles itself instead of failing (202). */
  accept?: number[];
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Seconds (or an HTTP date) in Retry-After as milliseconds; undefined when absent or unreadable. */
export function retryAfterMs(value: string | null, now = Date.now()): number | undefined {
  if (!value) return undefined;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const at = Date.parse(value);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

function toBlob(file: FileInput): Blob {
  if (file instanceof Blob) return file;
  // A copy, so the caller's buffer (possibly a view into a larger one) is not sent whole.
  return new Blob([file instanceof ArrayBuffer ? file.slice(0) : new Uint8Array(file)]);
}

/** A typed client of the Cairn REST API. */
export class CairnClient {
  private readonly baseUrl: string;
  private readonly apiKey: string | undefined;
  private readonly maxRetries: number;
  private readonly maxRetryDelayMs: number;
  private readonly fetchImpl: typeof fetch;
  private readonly userAgent: string | undefined;
  private readonly uploadSessionAboveBytes: number;

  constructor(options: ClientOptions) {
    if (!/^https?:\/\//.test(options.baseUrl)) throw new TypeError('baseUrl must be an http(s) URL');
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.apiKey = options.apiKey;
    this.maxRetries = options.maxRetries ?? 3;
    this.maxRetryDelayMs = options.maxRetryDelayMs ?? 30_000;
    this.fetchImpl = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
    this.userAgent = options.userAgent;
    this.uploadSessionAboveBytes = options.uploadSessionAboveBytes ?? 32 * 1024 * 1024;
  }

  /**
   * Signs a file with a recipe. An Idempotency-Key is made unless given, so retries never sign twice. A file above
   * `uploadSessionAboveBytes` goes through an upload session first.
   */
  async sign(options: SignOptions): Promise<SignResult> {
    const fields: MultipartField[] = [{ name: 'recipe', value: options.recipe }];
    if (options.metadata) fields.push({ name: 'metadata', value: JSON.stringify(options.metadata) });
    fields.push(await this.fileField('asset', options, options));
    const idempotencyKey = options.idempotencyKey ?? crypto.randomUUID();
    const { status, body } = await this.request<SignResult | Job>('/v1/sign', {
      method: 'POST',
      body: multipartBody(fields, 'file' in options ? this.inlineProgress(options) : undefined),
      headers: { 'idempotency-key': idempotencyKey },
      idempotent: true,
      accept: [202],
    });
    if (status !== 202) return body as SignResult;
    if (options.wait === false) return body as unknown as SignResult;
    const done = await this.waitForJob((body as Job).job_id, options);
    return done as unknown as SignResult;
  }

  /** The multipart part carrying the file: the bytes themselves, or the `upload_id` of a session they went to. */
  private async fileField(name: string, source: FileSource, options: UploadOptions): Promise<MultipartField> {
    if ('uploadId' in source) return { name: 'upload_id', value: source.uploadId };
    const blob = toBlob(source.file);
    const filename = source.filename ?? options.filename ?? name;
    // Sessions need a key: a public verify (no key) sends the file inline, up to the public limit.
    if (blob.size <= this.uploadSessionAboveBytes || !this.apiKey) return { name, file: blob, filename };
    const session = await this.uploads.upload(blob, { ...options, filename });
    return { name: 'upload_id', value: session.upload_id };
  }

  /** The progress listener for a file sent inside the multipart request (not when it went to a session). */
  private inlineProgress(options: { file: FileInput; onUploadProgress?: ProgressListener }) {
    const inline = toBlob(options.file).size <= this.uploadSessionAboveBytes || !this.apiKey;
    return inline ? options.onUploadProgress : undefined;
  }

  /** Upload sessions: big files PUT once to a URL of their own, then named by `upload_id` in a sign or verify. */
  readonly uploads = {
    create: async (input: { size: number; filename?: string; contentType?: string }): Promise<UploadSession> =>
      (
        await this.request<UploadSession>('/v1/uploads', {
          method: 'POST',
          json: {
            size: input.size,
            ...(input.filename ? { filename: input.filename } : {}),
            ...(input.contentType ? { content_type: input.contentType } : {}),
          },
          idempotent: false,
        })
      ).body,
    /** PUTs the file to the session's URL (no API key: the URL is signed), streaming it. */
    put: async (session: UploadSession, file: FileInput, options: UploadOptions = {}): Promise<void> => {
      const blob = toBlob(file);
      await this.send(session.upload_url, {
        method: 'PUT',
        body: rawBody(blob, options.onUploadProgress),
        idempotent: false,
        absolute: true,
      });
    },
    /** A session made for this file and filled: its `upload_id` is ready for `sign` or `verify`. */
    upload: async (file: FileInput, options: UploadOptions = {}): Promise<UploadSession> => {
      const blob = toBlob(file);
      const session = await this.uploads.create({
        size: blob.size,
        ...(options.filename ? { filename: options.filename } : {}),
        ...(blob.type ? { contentType: blob.type } : {}),
      });
      await this.uploads.put(session, blob, options);
      return session;
    },
  };

  /** Polls a job until it is done (answering it) or failed (throwing its problem). */
  async waitForJob(
    jobId: string,
    options: { pollIntervalMs?: number; timeoutMs?: number; onJob?: (job: Job) => void } = {},
  ): Promise<Job> {
    const deadline = Date.now() + (options.timeoutMs ?? 600_000);
    for (;;) {
      const job = await this.getJob(jobId);
      options.onJob?.(job);
      if (job.status === 'done') return job;
      if (job.status === 'failed') {
        throw new CairnApiError(
          job.problem ?? {
            type: 'about:blank',
            title: 'Job failed',
            status: 500,
            detail: `Job ${jobId} failed.`,
            code: 'cairn.internal_error',
          },
        );
      }
      if (Date.now() > deadline) throw new Error(`Job ${jobId} still ${job.status} after the timeout`);
      await sleep(options.pollIntervalMs ?? 1000);
    }
  }

  async getJob(jobId: string): Promise<Job> {
    return (await this.request<Job>(`/v1/jobs/${encodeURIComponent(jobId)}`, { idempotent: true })).body;
  }

  /** Verifies a file (public without a key), a Cairn asset (needs its tenant's key) or a manifest URI. */
  async verify(
    input: VerifyInput,
    options: { pollIntervalMs?: number; timeoutMs?: number } & UploadOptions = {},
  ): Promise<Verification> {
    let answer: { status: number; body: Verification | Job };
    if ('file' in input || 'uploadId' in input) {
      const field = await this.fileField('file', input, options);
      answer = await this.request('/v1/verify', {
        method: 'POST',
        body: multipartBody([field], 'file' in input ? this.inlineProgress({ ...input, ...options }) : undefined),
        idempotent: true,
        accept: [202],
      });
    } else {
      const json = 'assetId' in input ? { asset_id: input.assetId } : { manifest_uri: input.manifestUri };
      answer = await this.request('/v1/verify', { method: 'POST', json, idempotent: true, accept: [202] });
    }
    if (answer.status !== 202) return answer.body as Verification;
    // A large file may be verified as a job: its result is the Verification.
    const job = await this.waitForJob((answer.body as Job).job_id, options);
    if (!job.result) throw new Error(`Verify job ${job.job_id} finished without a result`);
    return job.result;
  }

  /** Soft-binding lookup: the tenant's signed assets this file (or binding) is tied to. */
  async lookup(
    input: { file: FileInput; filename?: string } | { binding: { alg: string; value: string } },
  ): Promise<LookupResult> {
    if ('file' in input) {
      const body = multipartBody([{ name: 'file', file: toBlob(input.file), filename: input.filename ?? 'file' }]);
      return (await this.request<LookupResult>('/v1/lookup', { method: 'POST', body, idempotent: true })).body;
    }
    return (
      await this.request<LookupResult>('/v1/lookup', {
        method: 'POST',
        json: { binding: input.binding },
        idempotent: true,
      })
    ).body;
  }

  async usage(): Promise<Usage> {
    return (await this.request<Usage>('/v1/usage', { idempotent: true })).body;
  }

  /** One page of the audit log, newest first. */
  async auditPage(query: AuditQuery = {}): Promise<AuditPage> {
    return (
      await this.request<AuditPage>('/v1/audit', {
        query: {
          event_type: query.eventType,
          since: query.since,
          until: query.until,
          limit: query.pageSize,
          cursor: query.cursor,
        },
        idempotent: true,
      })
    ).body;
  }

  /** Every audit entry in range, newest first, fetching pages as the loop asks for them. */
  async *audit(query: AuditQuery = {}): AsyncGenerator<AuditEntry, void, undefined> {
    let cursor = query.cursor;
    for (;;) {
      const page = await this.auditPage({ ...query, ...(cursor ? { cursor } : {}) });
      yield* page.entries;
      if (!page.next_cursor) return;
      cursor = page.next_cursor;
    }
  }

  /**
   * The audit log as NDJSON (`format=ndjson`), one entry per line as the server streams it: every entry in range,
   * newest first, in one request, never the whole answer in memory.
   */
  async *auditNdjson(
    query: Omit<AuditQuery, 'pageSize' | 'cursor'> & { limit?: number } = {},
  ): AsyncGenerator<AuditEntry, void, undefined> {
    const res = await this.send('/v1/audit', {
      query: {
        format: 'ndjson',
        event_type: query.eventType,
        since: query.since,
        until: query.until,
        limit: query.limit,
      },
      headers: { accept: 'application/x-ndjson' },
      idempotent: true,
    });
    if (!res.body) return;
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let pending = '';
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        pending += value;
        let newline: number;
        while ((newline = pending.indexOf('\n')) >= 0) {
          const line = pending.slice(0, newline).trim();
          pending = pending.slice(newline + 1);
          if (line) yield JSON.parse(line) as AuditEntry;
        }
      }
      if (pending.trim()) yield JSON.parse(pending) as AuditEntry;
    } finally {
      // The caller may stop early (break): the rest of the stream is not read.
      await reader.cancel().catch(() => undefined); // already closed or errored: nothing left to release
    }
  }

  readonly webhooks = {
    create: async (input: WebhookInput): Promise<Webhook> =>
      (await this.request<Webhook>('/v1/webhooks', { method: 'POST', json: input, idempotent: false })).body,
    list: async (): Promise<Webhook[]> =>
      (await this.request<{ data: Webhook[] }>('/v1/webhooks', { query: { limit: 100 }, idempotent: true })).body.data,
    get: async (webhookId: string): Promise<Webhook> =>
      (await this.request<Webhook>(`/v1/webhooks/${encodeURIComponent(webhookId)}`, { idempotent: true })).body,
    delete: async (webhookId: string): Promise<void> => {
      await this.request<unknown>(`/v1/webhooks/${encodeURIComponent(webhookId)}`, {
        method: 'DELETE',
        idempotent: true,
      });
    },
    /**
     * A new secret; the replaced one keeps signing beside it for `overlapSeconds` (default 0: the spec's single
     * signature at once), so receivers that accept a list keep accepting deliveries while they switch.
     */
    rotateSecret: async (webhookId: string, options: { overlapSeconds?: number } = {}): Promise<Webhook> =>
      (
        await this.request<Webhook>(`/v1/webhooks/${encodeURIComponent(webhookId)}/rotate-secret`, {
          method: 'POST',
          idempotent: false,
          ...(options.overlapSeconds === undefined ? {} : { json: { overlap_seconds: options.overlapSeconds } }),
        })
      ).body,
    deliveries: async (webhookId: string, limit = 20): Promise<WebhookDelivery[]> =>
      (
        await this.request<{ data: WebhookDelivery[] }>(`/v1/webhooks/${encodeURIComponent(webhookId)}/deliveries`, {
          query: { limit },
          idempotent: true,
        })
      ).body.data,
  };

  readonly keys = {
    list: async (tenantId: string): Promise<ApiKey[]> =>
      (await this.request<{ data: ApiKey[] }>(`/v1/tenants/${encodeURIComponent(tenantId)}/keys`, { idempotent: true }))
        .body.data,
    create: async (
      tenantId: string,
      input: { scope: string; description?: string; expires_at?: string },
    ): Promise<ApiKey> =>
      (
        await this.request<ApiKey>(`/v1/tenants/${encodeURIComponent(tenantId)}/keys`, {
          method: 'POST',
          json: input,
          idempotent: false,
        })
      ).body,
    revoke: async (tenantId: string, keyId: string): Promise<ApiKey> =>
      (
        await this.request<ApiKey>(`/v1/tenants/${encodeURIComponent(tenantId)}/keys/${encodeURIComponent(keyId)}`, {
          method: 'DELETE',
          idempotent: true,
        })
      ).body,
  };

  private async request<T>(
    path: string,
    options: RequestOptions,
  ): Promise<{ status: number; body: T; headers: Headers }> {
    const res = await this.send(path, options);
    const text = await res.text();
    return { status: res.status, body: (text ? JSON.parse(text) : undefined) as T, headers: res.headers };
  }

  /** One call with its retries; answers the Response of a success (or an accepted status), else throws its problem. */
  private async send(path: string, options: RequestOptions & { absolute?: boolean }): Promise<Response> {
    const url = new URL(options.absolute ? path : this.baseUrl + path);
    for (const [name, value] of Object.entries(options.query ?? {}))
      if (value !== undefined && value !== '') url.searchParams.set(name, String(value));
    const headers: Record<string, string> = { accept: 'application/json', ...options.headers };
    // An upload session's URL is signed on its own: the API key is not sent to it (it may be another host, S3).
    if (this.apiKey && !options.absolute) headers.authorization = `Bearer ${this.apiKey}`;
    if (this.userAgent) headers['user-agent'] = this.userAgent;

    for (let attempt = 0; ; attempt++) {
      const prepared: PreparedBody | undefined =
        options.json !== undefined
          ? { body: JSON.stringify(options.json), headers: { 'content-type': 'application/json' }, streamed: false }
          : options.body?.();
      const init: RequestInit & { duplex?: 'half' } = {
        method: options.method ?? 'GET',
        headers: { ...headers, ...prepared?.headers },
        ...(prepared ? { body: prepared.body } : {}),
        ...(prepared?.streamed ? { duplex: 'half' } : {}),
      };
      const res = await this.fetchImpl(url, init);
      prepared?.onSent?.();
      const retryable = res.status === 429 || (res.status === 503 && options.idempotent);
      if (retryable && attempt < this.maxRetries) {
        // Retry-After when the server gave one; otherwise exponential backoff with jitter.
        const wait = retryAfterMs(res.headers.get('retry-after')) ?? 500 * 2 ** attempt * (0.5 + Math.random() / 2);
        await res.body?.cancel();
        await sleep(Math.min(wait, this.maxRetryDelayMs));
        continue;
      }
      if (res.ok || options.accept?.includes(res.status)) return res;
      throw new CairnApiError(await readProblem(res));
    }
  }
}

/** The problem in a failed answer; a body that is not one (a proxy's page) becomes a problem too. */
async function readProblem(res: Response): Promise<Problem> {
  const text = await res.text();
  try {
    const parsed = JSON.parse(text) as Partial<Problem>;
    if (typeof parsed.code === 'string')
      return {
        type: 'about:blank',
        title: '',
        detail: '',
        ...parsed,
        status: res.status,
        code: parsed.code,
      };
  } catch {
    // not JSON: described below
  }
  return {
    type: 'about:blank',
    title: res.statusText || 'HTTP error',
    status: res.status,
    detail: text.slice(0, 500),
    code: res.status >= 500 ? 'cairn.unavailable' : 'cairn.http_error',
  };
}
