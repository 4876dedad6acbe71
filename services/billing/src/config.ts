import { z } from 'zod';

/** billing-only settings (the common ones come from @cairn/config). */
export const billingConfigShape = {
  /** A reservation neither committed nor released within this many seconds is released by the sweep. */
  BILLING_RESERVATION_TTL_SECONDS: z.coerce.number().int().positive().default(300),
  /** How often the expiry sweep runs; 0 disables the timer (tests call SweepExpired). */
  BILLING_SWEEP_INTERVAL_MS: z.coerce.number().int().min(0).default(30_000),
  /**
   * Overage price table, JSON `{"<plan>": {"<meter>": <usd per unit>}}`, merged over the defaults
   * (domain/prices.ts). Only growth and enterprise bill overage; other plans' entries are ignored.
   */
  BILLING_PRICES_JSON: z.string().optional(),
};
