import { createHash } from 'node:crypto';
import { z } from 'zod';
import { positiveIntSetting, publicUrlSetting, storedManifestConfigShape } from '@cairn/config';

/** Gateway-only settings (the common ones come from @cairn/config). */
export const gatewayConfigShape = {
  /** Port of the REST API. */
  HTTP_PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  /**
   * Bind address of the REST API.
   * @default `GRPC_HOST`
   */
  HTTP_HOST: z.string().optional(),
  /**
   * Builds `manifest_uri` and `verifier_url`, upload URLs and the docs links: what clients are told to open. In
   * production it must be https on a name or address reachable from outside (see the top of this page for what is
   * refused); the signer and verifier take the same value.
   */
  PUBLIC_BASE_URL: publicUrlSetting('http://127.0.0.1:8080', 'the gateway address given to clients'),
  /**
   * 64 hex (32 bytes): signs upload-session URLs; `npm run up` makes one in `.cairn/data-key` (the tenant service
   * takes the same key); required in production.
   * @default a fixed development key
   */
  CAIRN_DATA_KEY: z
    .string()
    .regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hex characters')
    .optional(),
  /** Which proxies may set `X-Forwarded-For` (Express syntax). */
  TRUST_PROXY: z.string().default('loopback'),
  /**
   * Uploads, derived assets and manifest stores, shared with the signer, verifier and soft-binding service:
   * `file:///path` (`npm run up`: `.cairn/blobs`) or `s3://bucket/prefix` (`S3_ENDPOINT` for MinIO;
   * `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY` when set, else the SDK's default chain). Writes stream, never held
   * whole: a temporary file renamed into place, or an S3 multipart upload with one 8 MiB part in memory (aborted on
   * failure; give the bucket an `AbortIncompleteMultipartUpload` lifecycle rule for uploads cut off by a crash).
   */
  BLOB_STORE_URL: z.string().default('file:///tmp/cairn/blobs'),
  /** Signs of uploads up to this size answer 200 with the result; larger ones answer 202 with a job. */
  SYNC_SIGN_MAX_BYTES: positiveIntSetting(5 * 1024 * 1024),
  /** Direct upload limit of sign and verify (413 above it). */
  UPLOAD_MAX_BYTES: positiveIntSetting(100 * 1024 * 1024),
  /**
   * Largest file an upload session (`POST /v1/uploads`) takes on any plan: its declared size (413 above) and its PUT
   * are held to this.
   */
  UPLOAD_SESSION_MAX_BYTES: positiveIntSetting(5 * 1024 * 1024 * 1024),
  /** How long an upload session's URL and its uploaded file live unused; past it the sweep deletes the file. */
  UPLOAD_SESSION_TTL_SECONDS: z.coerce
    .number()
    .int()
    .positive()
    .max(7 * 86_400)
    .default(3600),
  /**
   * On the filesystem blob store: an upload session (its creation and its PUT) that would leave less than this free
   * where blobs are kept is refused (507 `cairn.upload.insufficient_storage`), so uploads cannot fill the disk the
   * signed assets live on.
   */
  UPLOAD_MIN_FREE_BYTES: z.coerce
    .number()
    .int()
    .nonnegative()
    .default(1024 * 1024 * 1024),
  /**
   * How long an idle client connection stays open for its next request. Longer than the idle timeout of the proxy
   * in front (60 s for ingress-nginx's upstream keep-alive and for AWS load balancers): a proxy or client that reuses
   * a connection at the moment the gateway closes it gets a reset instead of an answer.
   */
  HTTP_KEEP_ALIVE_TIMEOUT_MS: z.coerce.number().int().min(1000).max(600_000).default(65_000),
  /** Every request's body must have arrived within this from its headers (an upload PUT gets more, below). */
  REQUEST_TIMEOUT_MS: z.coerce.number().int().min(1000).max(3_600_000).default(120_000),
  /**
   * An upload PUT may take as long as its declared size needs at this rate, plus the usual request timeout: a 5 GiB
   * file at the default 1 MiB/s has 87 minutes. Other requests keep the 120 s timeout.
   */
  UPLOAD_MIN_BYTES_PER_SECOND: positiveIntSetting(1024 * 1024),
  /** How often expired upload sessions' files are deleted. */
  UPLOAD_SESSION_SWEEP_INTERVAL_MS: positiveIntSetting(60_000),
  /** Authenticated verifies of uploads above this size answer 202 with a job (so does Prefer: respond-async). */
  SYNC_VERIFY_MAX_BYTES: positiveIntSetting(5 * 1024 * 1024),
  /** The public verify stays synchronous: it takes files up to this size (413 above; verify with a key instead). */
  PUBLIC_VERIFY_MAX_BYTES: positiveIntSetting(25 * 1024 * 1024),
  /** Unauthenticated verifies per client address per minute (the address is hashed, never stored or logged). */
  PUBLIC_VERIFY_PER_MINUTE: positiveIntSetting(10),
  /**
   * Unauthenticated C2PA soft-binding queries (`/c2pa/v1/matches/*`) per client address per minute (hashed like the
   * above); manifest fetches and the algorithm list are not limited.
   */
  PUBLIC_RESOLUTION_PER_MINUTE: positiveIntSetting(30),
  /**
   * `POST /c2pa/v1/matches/byReference`: the whole fetch of the referenced asset, connect to last byte (past it: 502
   * `cairn.resolution.fetch_failed`).
   */
  REFERENCE_FETCH_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(15_000),
  /**
   * byReference: the largest `assetLength` taken (at most `UPLOAD_MAX_BYTES`; 413 above). The answer is held in
   * memory while it is read, so this stays well below the streamed upload limit.
   */
  REFERENCE_FETCH_MAX_BYTES: positiveIntSetting(25 * 1024 * 1024),
  /**
   * byReference: how many referenced assets this gateway process fetches and queries at once (each is held in memory,
   * up to `REFERENCE_FETCH_MAX_BYTES`, for up to `REFERENCE_FETCH_TIMEOUT_MS`); one more is answered 503
   * `cairn.unavailable` with `Retry-After` at once, so callers from many addresses cannot pile fetches up in memory.
   */
  REFERENCE_FETCHES_AT_ONCE: positiveIntSetting(4),
  /**
   * Whether byReference fetches may reach loopback: they go through the outbound address policy, where private,
   * link-local and metadata addresses are always refused and production takes https only.
   * @default `true` in development, `false` in production
   */
  OUTBOUND_ALLOW_LOOPBACK: z.enum(['true', 'false']).optional(),
  /** The resolution API's manifest size limit, shared with the soft-binding service. */
  ...storedManifestConfigShape,
  /**
   * How long a sign's `Idempotency-Key` claim lives unfinished (longer than the sign's 120 s deadline plus the time
   * to record its answer): a retry with the same key meanwhile is 409 `cairn.idempotency.in_progress`; past it (its
   * gateway died mid-sign, or lost the database) the retry takes the claim over and signs under the asset id
   * recorded with the claim, so a sign the signer had finished is answered, never made twice. The Redis slot of a
   * sign lapses with it.
   */
  SIGN_CLAIM_LEASE_SECONDS: z.coerce.number().int().min(1).max(3600).default(180),
  /**
   * Signs of one tenant running at once, across replicas (a Redis semaphore); one more answers 429
   * `cairn.ratelimit.exceeded` with `Retry-After`.
   */
  SIGN_CONCURRENCY_PER_TENANT: positiveIntSetting(4),
  /**
   * Failed authentications (401) per client address (hashed) per minute; past it every request with an
   * `Authorization` header from that address answers 429 with `Retry-After`, before any database work, until the
   * minute from its first failure ends, except a key that authenticated from that address within the last hour: it
   * is held only to the failures made with its own key id there.
   */
  AUTH_FAILURES_PER_MINUTE: positiveIntSetting(20),
  /** Self-onboarding attempts per client address per minute. */
  ONBOARD_RATE_LIMIT_PER_MINUTE: positiveIntSetting(10),
  /**
   * How long a successful authentication is reused without asking the tenant service, and how many keys are
   * remembered (the oldest dropped first). A key revoked, or a setting changed, through a gateway takes effect there
   * at once and on every other replica within this TTL; refusals are never cached. A recipe found in the tenant
   * service's catalog is reused as long (one gRPC round trip less per sign).
   */
  AUTH_CACHE_TTL_MS: z.coerce.number().int().min(0).max(60_000).default(5_000),
  AUTH_CACHE_MAX_ENTRIES: positiveIntSetting(10_000),
};

/** Development runs without configuring a data key; production must never silently use this one. */
export function resolveDataKey(env: 'development' | 'production', configured: string | undefined): string {
  if (configured) return configured;
  if (env === 'production') throw new Error('CAIRN_DATA_KEY is required in production (64 hex characters).');
  return createHash('sha256').update('cairn-development-data-key').digest('hex');
}
