import { z } from 'zod';
import { publicUrlSetting } from '@cairn/config';
import { mediaLimitsConfigShape } from '@cairn/media';
// pki/index.js would load the whole PKI (c2pa-node, PKCS#11) into a module that only declares settings.
import { pkiConfigShape } from './pki/config.js';

/** Signer settings (the common ones come from @cairn/config). */
export const signerConfigShape = {
  ...pkiConfigShape,
  /** What a sign decodes at most (MEDIA_MAX_*), checked from the upload's headers first. */
  ...mediaLimitsConfigShape,
  /**
   * Builds `manifest_uri`, `verifier_url` and `asset_url`: the gateway's public address (its `PUBLIC_BASE_URL`);
   * in production a public https URL.
   */
  PUBLIC_BASE_URL: publicUrlSetting('http://127.0.0.1:8080', 'written into every manifest_uri and verifier_url'),
  /** Where uploads, derived assets and manifest stores are: the gateway's `BLOB_STORE_URL`, shared. */
  BLOB_STORE_URL: z.string().default('file:///tmp/cairn/blobs'),
  /** How often derived assets past their retention are deleted. */
  ASSET_SWEEP_INTERVAL_MS: z.coerce.number().int().positive().default(60_000),
  /** How often rotation and certificate.expiring are checked. */
  PKI_CHECK_INTERVAL_MS: z.coerce.number().int().positive().default(3_600_000),
  /**
   * Attempts of an async sign (a worker crash or timeout counts as one) before it ends `failed` with its problem and
   * one `job.failed`.
   */
  SIGN_JOB_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(20).default(3),
  /**
   * How long a video sign job waits, within one attempt, for a watermark service that went away mid-marking (a
   * restart, a rollout) before that attempt fails; the marking is asked again, same watermark id, as soon as the
   * service answers; `0`: not at all.
   */
  SIGN_JOB_WATERMARK_WAIT_MS: z.coerce.number().int().min(0).default(30_000),
  /**
   * Sign is idempotent by its caller-chosen asset id: a recorded id answers its recorded result (nothing signed,
   * written or published again); while a sign of that id runs, another is 409 `cairn.idempotency.in_progress`; a
   * claim left by a signer killed mid-sign lapses after this and the retry takes it over.
   */
  ASSET_CLAIM_LEASE_SECONDS: z.coerce.number().int().min(1).max(3600).default(180),
  /**
   * C2PA signing runs in this many child processes (c2pa-rs parses and rewrites the upload there; the key stays in
   * the signer), each sign with this budget, each child with this V8 heap (MiB); a sign past the budget, or whose
   * child dies, is one 503 `cairn.sign.worker_failed` and the child is replaced.
   */
  SIGN_WORKERS: z.coerce.number().int().min(1).max(32).default(2),
  SIGN_WORKER_TIMEOUT_MS: z.coerce.number().int().positive().default(60_000),
  SIGN_WORKER_MAX_OLD_SPACE_MB: z.coerce.number().int().min(64).default(512),
  /** Budget of one signature from a tenant's own signing endpoint (BYOK); past it: 503 `cairn.signer.unavailable`. */
  BYOK_SIGN_TIMEOUT_MS: z.coerce.number().int().positive().default(5_000),
  /**
   * Whether BYOK signing endpoints may be on loopback (a local test endpoint); private, link-local and metadata
   * addresses are refused either way, and production takes https only.
   * @default `true` in development, `false` in production
   */
  OUTBOUND_ALLOW_LOOPBACK: z.enum(['true', 'false']).optional(),
};
