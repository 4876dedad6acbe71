import { createHash } from 'node:crypto';
import { z } from 'zod';
import { publicUrlSetting } from '@cairn/config';

/** Gateway-only settings (the common ones come from @cairn/config). */
export const gatewayConfigShape = {
  HTTP_PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  /** Defaults to GRPC_HOST. */
  HTTP_HOST: z.string().optional(),
  /** Builds manifest_uri and verifier_url, upload URLs and the docs links: what clients are told to open. */
  PUBLIC_BASE_URL: publicUrlSetting('http://127.0.0.1:8080', 'the gateway address given to clients'),
  /** 32-byte key (64 hex) signing upload URLs. Required in production. */
  CAIRN_DATA_KEY: z
    .string()
    .regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hex characters')
    .optional(),
  TRUST_PROXY: z.string().default('loopback'),
  /** file:///path (embedded default) or s3://bucket/prefix; shared with the signer and verifier. */
  BLOB_STORE_URL: z.string().default('file:///tmp/cairn/blobs'),
  /** Signs of uploads up to this size answer 200 with the result; larger ones answer 202 with a job. */
  SYNC_SIGN_MAX_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(5 * 1024 * 1024),
  /** Direct upload limit of sign and verify. */
  UPLOAD_MAX_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(100 * 1024 * 1024),
  /** Largest file an upload session (POST /v1/uploads) takes: its declared size and its PUT are held to this. */
  UPLOAD_SESSION_MAX_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(5 * 1024 * 1024 * 1024),
  /** How long an upload session's URL and its uploaded file live unused; past it the sweep deletes the file. */
  UPLOAD_SESSION_TTL_SECONDS: z.coerce
    .number()
    .int()
    .positive()
    .max(7 * 86_400)
    .default(3600),
  /**
   * On the filesystem blob store: an upload session (its creation and its PUT) that would leave less than this free
   * where blobs are kept is refused (507), so uploads cannot fill the disk the signed assets live on.
   */
  UPLOAD_MIN_FREE_BYTES: z.coerce
    .number()
    .int()
    .nonnegative()
    .default(1024 * 1024 * 1024),
  /** Every request's body must have arrived within this from its headers (an upload PUT gets more, below). */
  REQUEST_TIMEOUT_MS: z.coerce.number().int().min(1000).max(3_600_000).default(120_000),
  /**
   * An upload PUT may take as long as its declared size needs at this rate, plus the usual request timeout: a 5 GiB
   * file at the default 1 MiB/s has 87 minutes. Other requests keep the 120 s timeout.
   */
  UPLOAD_MIN_BYTES_PER_SECOND: z.coerce
    .number()
    .int()
    .positive()
    .default(1024 * 1024),
  /** How often expired upload sessions' files are deleted. */
  UPLOAD_SESSION_SWEEP_INTERVAL_MS: z.coerce.number().int().positive().default(60_000),
  /** Authenticated verifies of uploads above this size answer 202 with a job (so does Prefer: respond-async). */
  SYNC_VERIFY_MAX_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(5 * 1024 * 1024),
  /** The public verify stays synchronous: it takes files up to this size (413 above; verify with a key instead). */
  PUBLIC_VERIFY_MAX_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(25 * 1024 * 1024),
  /** Unauthenticated verifies per client address per minute. */
  PUBLIC_VERIFY_PER_MINUTE: z.coerce.number().int().positive().default(10),
  /** Unauthenticated C2PA soft-binding queries (/c2pa/v1/matches/*) per client address per minute. */
  PUBLIC_RESOLUTION_PER_MINUTE: z.coerce.number().int().positive().default(30),
  /** POST /c2pa/v1/matches/byReference: the whole fetch of the referenced asset, connect to last byte. */
  REFERENCE_FETCH_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(15_000),
  /**
   * byReference: the largest asset fetched (at most UPLOAD_MAX_BYTES). The answer is held in memory while it is
   * read, so this stays well below the streamed upload limit.
   */
  REFERENCE_FETCH_MAX_BYTES: z.coerce
    .number()
    .int()
    .positive()
    .default(25 * 1024 * 1024),
  /**
   * byReference fetches go through the outbound address policy: private, link-local and metadata addresses are
   * always refused; loopback is allowed outside production unless this says otherwise.
   */
  OUTBOUND_ALLOW_LOOPBACK: z.enum(['true', 'false']).optional(),
  /** Largest manifest store POST /c2pa/v1/manifests takes (the soft-binding service holds it to its own limit too). */
  STORED_MANIFEST_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(64 * 1024 * 1024)
    .default(2 * 1024 * 1024),
  /**
   * How long a sign's Idempotency-Key claim lives unfinished: longer than the sign's own 120 s deadline plus the
   * time to record its answer, so only a claim whose gateway died (or lost the database) is taken over. The
   * takeover signs under the claim's recorded asset id, so it answers the first sign if the signer recorded it.
   */
  SIGN_CLAIM_LEASE_SECONDS: z.coerce.number().int().min(1).max(3600).default(180),
  /** Signs of one tenant running at once (across replicas, counted in Redis); one more answers 429. */
  SIGN_CONCURRENCY_PER_TENANT: z.coerce.number().int().positive().default(4),
  /** Failed authentications (401) per client address per minute; past it every request with a key answers 429. */
  AUTH_FAILURES_PER_MINUTE: z.coerce.number().int().positive().default(20),
  /** Self-onboarding attempts per client address per minute. */
  ONBOARD_RATE_LIMIT_PER_MINUTE: z.coerce.number().int().positive().default(10),
  /**
   * How long a successful authentication is reused without asking the tenant service: the bound within which a
   * key revoked (or a setting changed) through another gateway replica stops working here. Through this one: at once.
   * A recipe read from the tenant service's catalog is reused as long.
   */
  AUTH_CACHE_TTL_MS: z.coerce.number().int().min(0).max(60_000).default(5_000),
  /** Keys remembered at most (the oldest is dropped first). */
  AUTH_CACHE_MAX_ENTRIES: z.coerce.number().int().positive().default(10_000),
};

/** Development runs without configuring a data key; production must never silently use this one. */
export function resolveDataKey(env: 'development' | 'production', configured: string | undefined): string {
  if (configured) return configured;
  if (env === 'production') throw new Error('CAIRN_DATA_KEY is required in production (64 hex characters).');
  return createHash('sha256').update('cairn-development-data-key').digest('hex');
}
