import { z } from 'zod';
import { mediaLimitsConfigShape } from '@cairn/media';
import { pkiConfigShape } from './pki/index.js';

/** Signer settings (the common ones come from @cairn/config). */
export const signerConfigShape = {
  ...pkiConfigShape,
  /** What a sign decodes at most (MEDIA_MAX_*), checked from the upload's headers first. */
  ...mediaLimitsConfigShape,
  /** Builds manifest_uri, verifier_url and asset_url. */
  PUBLIC_BASE_URL: z.string().url().default('http://127.0.0.1:8080'),
  /** file:///path (embedded default) or s3://bucket/prefix. Shared with the gateway and verifier. */
  BLOB_STORE_URL: z.string().default('file:///tmp/cairn/blobs'),
  /** How often derived assets past their retention are deleted. */
  ASSET_SWEEP_INTERVAL_MS: z.coerce.number().int().positive().default(60_000),
  /** How often rotation and certificate.expiring are checked. */
  PKI_CHECK_INTERVAL_MS: z.coerce.number().int().positive().default(3_600_000),
  SIGN_JOB_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(20).default(5),
};
