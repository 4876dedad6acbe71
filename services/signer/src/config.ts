import { z } from 'zod';
import { publicUrlSetting } from '@cairn/config';
import { mediaLimitsConfigShape } from '@cairn/media';
import { pkiConfigShape } from './pki/index.js';

/** Signer settings (the common ones come from @cairn/config). */
export const signerConfigShape = {
  ...pkiConfigShape,
  /** What a sign decodes at most (MEDIA_MAX_*), checked from the upload's headers first. */
  ...mediaLimitsConfigShape,
  /** Builds manifest_uri, verifier_url and asset_url. */
  PUBLIC_BASE_URL: publicUrlSetting('http://127.0.0.1:8080', 'written into every manifest_uri and verifier_url'),
  /** file:///path (embedded default) or s3://bucket/prefix. Shared with the gateway and verifier. */
  BLOB_STORE_URL: z.string().default('file:///tmp/cairn/blobs'),
  /** How often derived assets past their retention are deleted. */
  ASSET_SWEEP_INTERVAL_MS: z.coerce.number().int().positive().default(60_000),
  /** How often rotation and certificate.expiring are checked. */
  PKI_CHECK_INTERVAL_MS: z.coerce.number().int().positive().default(3_600_000),
  /** Attempts of an async sign before it ends `failed` with job.failed (a crash or timeout each counts as one). */
  SIGN_JOB_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(20).default(3),
  /**
   * How long a sign job's video marking waits for the watermark service to come back when it goes away mid-stream
   * (a restart, a rollout): the stream is opened again, same watermark id, when it does; past this, the attempt fails.
   */
  SIGN_JOB_WATERMARK_WAIT_MS: z.coerce.number().int().min(0).default(30_000),
  /**
   * How long a sign's claim on its asset id lives: a retried Sign of the same asset id meanwhile answers 409
   * cairn.idempotency.in_progress; past it (the signer died mid-sign) the retry takes the claim over.
   */
  ASSET_CLAIM_LEASE_SECONDS: z.coerce.number().int().min(1).max(3600).default(180),
  /** C2PA child processes (c2pa-rs parses and rewrites uploads there; the key stays in the signer). */
  SIGN_WORKERS: z.coerce.number().int().min(1).max(32).default(2),
  /** Budget of one C2PA sign in a child; past it the child is killed and the sign fails 503 cairn.sign.worker_failed. */
  SIGN_WORKER_TIMEOUT_MS: z.coerce.number().int().positive().default(60_000),
  /** V8 heap of each C2PA child, MiB. */
  SIGN_WORKER_MAX_OLD_SPACE_MB: z.coerce.number().int().min(64).default(512),
  /** Budget of one signature from a tenant's own signing endpoint (BYOK); past it the sign is 503 cairn.signer.unavailable. */
  BYOK_SIGN_TIMEOUT_MS: z.coerce.number().int().positive().default(5_000),
  /**
   * Whether BYOK endpoints may be on loopback. Unset: allowed in development (a local test endpoint), refused in
   * production; private, link-local and metadata addresses are refused either way, and production takes https only.
   */
  OUTBOUND_ALLOW_LOOPBACK: z.enum(['true', 'false']).optional(),
};
