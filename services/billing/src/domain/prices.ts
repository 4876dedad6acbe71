import { z } from 'zod';
import { METERS, PLAN_NAMES, type Meter, type PlanName } from './plans.js';

/** Overage price per unit in USD, by plan and meter (defaults; BILLING_PRICES_JSON overrides any entry). */
export const DEFAULT_PRICES: Readonly<Record<'growth' | 'enterprise', Readonly<Record<Meter, number>>>> = {
  growth: {
    image_sign: 0.01,
    audio_sign: 0.02,
    video_sign: 0.05,
    text_sign: 0.001,
    image_verify: 0.002,
    audio_verify: 0.004,
    video_verify: 0.008,
    lookup: 0.002,
    byok_sign: 0.01,
    anchor_batch: 0.5,
  },
  enterprise: {
    image_sign: 0.008,
    audio_sign: 0.016,
    video_sign: 0.04,
    text_sign: 0.0008,
    image_verify: 0.0015,
    audio_verify: 0.003,
    video_verify: 0.006,
    lookup: 0.0015,
    byok_sign: 0.008,
    anchor_batch: 0.4,
  },
};

const priceJson = z.partialRecord(z.enum(PLAN_NAMES), z.partialRecord(z.enum(METERS), z.number().min(0).max(1000)));

/** Prices in micro-USD (integers, so sums are exact). */
export class PriceTable {
  private readonly micros: Record<PlanName, Record<Meter, number>>;

  constructor(overrideJson?: string) {
    const overrides: z.output<typeof priceJson> = overrideJson ? priceJson.parse(JSON.parse(overrideJson)) : {};
    const table = {} as Record<PlanName, Record<Meter, number>>;
    for (const plan of PLAN_NAMES) {
      const base: Partial<Record<Meter, number>> =
        plan === 'growth' || plan === 'enterprise' ? DEFAULT_PRICES[plan] : {};
      const merged = { ...base, ...(overrides[plan] ?? {}) };
      table[plan] = Object.fromEntries(METERS.map((m) => [m, Math.round((merged[m] ?? 0) * 1_000_000)])) as Record<
        Meter,
        number
      >;
    }
    this.micros = table;
  }

  unitMicros(plan: PlanName, meter: Meter): number {
    return this.micros[plan][meter];
  }
}

export const microsToUsd = (micros: number | bigint): number => Number(micros) / 1_000_000;
export const usdToMicros = (usd: number): number => Math.round(usd * 1_000_000);
