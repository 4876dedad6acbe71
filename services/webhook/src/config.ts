import { createHash } from 'node:crypto';
import { z } from 'zod';

/** webhook-only settings (the common ones come from @cairn/config). */
export const webhookConfigShape = {
  /**
   * 64 hex (32 bytes): seals endpoint secrets at rest (AES-256-GCM); required in production.
   * @default a fixed development key
   */
  WEBHOOK_SECRET_KEY: z
    .string()
    .regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hex characters')
    .optional(),
  /** Multiplies the retry delays (30 s, 5 min, 30 min, 2 h); tests and local runs shrink them, e.g. `0.001`. */
  WEBHOOK_RETRY_SCALE: z.coerce.number().positive().max(100).default(1),
  /** A receiver must answer 2xx within this time (spec: 30 seconds). */
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().positive().default(30_000),
  /** Deliveries in flight at once per process, over all endpoints (each endpoint has at most one). */
  WEBHOOK_MAX_IN_FLIGHT: z.coerce.number().int().positive().max(10_000).default(64),
  /** Shortest wait between two looks for due deliveries (fan-out wakes the scheduler at once). */
  WEBHOOK_POLL_INTERVAL_MS: z.coerce.number().int().positive().default(1000),
  /** Longest sleep of the scheduler with no delivery scheduled (it wakes for the earliest retry). */
  WEBHOOK_IDLE_MAX_MS: z.coerce.number().int().positive().max(600_000).default(30_000),
};

/** Development runs without configuring a key; production must never silently use this one. */
export function resolveSecretKey(env: 'development' | 'production', configured: string | undefined): string {
  if (configured) return configured;
  if (env === 'production') throw new Error('WEBHOOK_SECRET_KEY is required in production (64 hex characters).');
  return createHash('sha256').update('cairn-development-webhook-secret-key').digest('hex');
}
