import { z } from 'zod';

/** billing-only settings (the common ones come from @cairn/config). */
export const billingConfigShape = {
  /**
   * A reservation neither committed nor released within this many seconds is released by the sweep (a crash never
   * leaks quota).
   */
  BILLING_RESERVATION_TTL_SECONDS: z.coerce.number().int().positive().default(300),
  /** How often the expiry sweep runs; 0 disables the timer (tests call SweepExpired). */
  BILLING_SWEEP_INTERVAL_MS: z.coerce.number().int().min(0).default(30_000),
  /**
   * Overage USD per unit, JSON `{"growth": {"image_sign": 0.01, ...}, "enterprise": {...}}`, merged over the
   * defaults. Only growth and enterprise bill overage; other plans' entries are ignored.
   * @default the built-in table (`packages/catalog`)
   */
  BILLING_PRICES_JSON: z.string().optional(),
};
