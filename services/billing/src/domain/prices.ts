import { z } from 'zod';
import { DEFAULT_PRICES, METERS, PLAN_NAMES, type Meter, type PlanName } from '@cairn/catalog';

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
