import { createHash } from 'node:crypto';
import { z } from 'zod';

/** Tenant-service settings (the common ones come from @cairn/config). */
export const tenantConfigShape = {
  /**
   * 64 hex (32 bytes): seals the onboarding answer kept for idempotent replays (AES-256-GCM); the gateway's key, so
   * answers it sealed earlier still open; required in production.
   * @default a fixed development key
   */
  CAIRN_DATA_KEY: z
    .string()
    .regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hex characters')
    .optional(),
  /**
   * The production payment processor (Stripe API): its secret key and API base; required in production
   * (development uses test mode).
   */
  PAYMENT_PROCESSOR_SECRET_KEY: z.string().optional(),
  PAYMENT_PROCESSOR_API_BASE: z.string().url().optional(),
  /**
   * The onboarding idempotency window: the sealed answer (admin key included) is replayed only this long, then
   * dropped by a sweep run this often.
   */
  ONBOARD_REPLAY_TTL_SECONDS: z.coerce.number().int().positive().default(86_400),
  ONBOARD_REPLAY_SWEEP_INTERVAL_MS: z.coerce.number().int().positive().default(60_000),
  /** How often the service looks for API keys expiring within 7 days (`key.expiring`, once per key). */
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
