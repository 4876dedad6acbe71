import { z } from 'zod';

/** A count or size above zero, read from its environment variable (a string, coerced); `fallback` when unset. */
export function positiveIntSetting(fallback: number) {
  return z.coerce.number().int().positive().default(fallback);
}
