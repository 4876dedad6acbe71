import { z } from 'zod';
import { mediaLimitsConfigShape } from '@cairn/media';
import { parseWatermarkKeys, type WatermarkKey } from './domain/keys.js';

/** watermark-only settings (the common ones come from @cairn/config). */
export const watermarkConfigShape = {
  /** What the service decodes at most (MEDIA_MAX_*): callers send files, the service decodes them. */
  ...mediaLimitsConfigShape,
  /**
   * Worker threads for embedding and detection. Unset: as many as the container's CPU limit allows (cgroup
   * cpu.max or the v1 CFS quota, rounded up), else one per core (adapters/cpu-limit.ts).
   */
  WATERMARK_WORKERS: z.coerce.number().int().min(1).max(64).optional(),
  /**
   * Memory for the image search's readings of Cairn's own signed files (about 0.2 MiB per megapixel), so a verify of
   * the very bytes Cairn signed skips the decode and the search; 0 keeps none.
   */
  WATERMARK_DETECTION_MEMO_MIB: z.coerce.number().int().min(0).max(4096).default(32),
  /**
   * The cairn-dct-keyed-v1 keys: `kid:hex,kid:hex` or JSON `[{"kid","key"}]`, 32-byte keys, the first signs new
   * marks, the rest are still detected (rotation). Required in production; unset in development, the service
   * generates one and keeps it sealed in its schema (app/keyring.ts).
   */
  WATERMARK_KEYS: z
    .string()
    .optional()
    .transform((text, ctx): WatermarkKey[] | undefined => {
      if (text === undefined || text.trim() === '') return undefined;
      const parsed = parseWatermarkKeys(text);
      if (parsed.ok) return parsed.keys;
      for (const problem of parsed.problems) ctx.addIssue({ code: 'custom', message: problem });
      return z.NEVER;
    }),
};
