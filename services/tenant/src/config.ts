import { createHash } from 'node:crypto';
import { z } from 'zod';

/** Tenant-service settings (the common ones come from @cairn/config). */
export const tenantConfigShape = {
  /**
   * 32-byte key (64 hex) sealing the onboarding answers kept for replays. Required in production; the same key
   * the gateway had, so answers sealed before the tenant service existed still open.
   */
  CAIRN_DATA_KEY: z
    .string()
    .regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hex characters')
    .optional(),
  PAYMENT_PROCESSOR_SECRET_KEY: z.string().optional(),
  PAYMENT_PROCESSOR_API_BASE: z.string().url().optional(),
  /** How long the sealed onboarding answer (it holds the admin key) is kept for replays: the idempotency window. */
  ONBOARD_REPLAY_TTL_SECONDS: z.coerce.number().int().positive().default(86_400),
  /** How often sealed onboarding answers past that window are dropped. */
  ONBOARD_REPLAY_SWEEP_INTERVAL_MS: z.coerce.number().int().positive().default(60_000),
  /** How often the service looks for API keys expiring within 7 days (key.expiring, once per key). */
  KEY_EXPIRY_SWEEP_INTERVAL_MS: z.coerce.number().int().positive().default(60_000),
};

/**
 * Development runs without configuring a data key; production must never silently use this one. (The gateway
 * resolves its CAIRN_DATA_KEY, for upload URLs, the same way: the same development key on both.)
 */
export function resolveDataKey(env: 'development' | 'production', configured: string | undefined): string {
  if (configured) return configured;
  if (env === 'production') throw new Error('CAIRN_DATA_KEY is required in production (64 hex characters).');
  return createHash('sha256').update('cairn-development-data-key').digest('hex');
}
