import { z } from 'zod';
import { mediaLimitsConfigShape } from '@cairn/media';
import { parseWatermarkKeys, type WatermarkKey } from './domain/keys.js';

/** watermark-only settings (the common ones come from @cairn/config). */
export const watermarkConfigShape = {
  /** What the service decodes at most (MEDIA_MAX_*): callers send files, the service decodes them. */
  ...mediaLimitsConfigShape,
  /**
   * Worker threads for embedding and detection (plus one low-priority worker for background detections: the stored
   * verdict of each new asset). Unset, the pool takes the CPU limit of the container's cgroup (v2 `cpu.max`, v1
   * `cpu.cfs_quota_us`/`cpu.cfs_period_us`) rounded up (1500m → 2), at most the cores the process sees, at least 1
   * (adapters/cpu-limit.ts); the start-up log line `image worker pool started` says how many and from where
   * (`workers_source`).
   * @default the container's CPU limit, else the cores
   */
  WATERMARK_WORKERS: z.coerce.number().int().min(1).max(64).optional(),
  /**
   * Memory for the image search's readings of Cairn's own signed files (about 0.2 MiB per megapixel), so a verify of
   * the very bytes Cairn signed skips the decode and the search; `0` keeps none.
   */
  WATERMARK_DETECTION_MEMO_MIB: z.coerce.number().int().min(0).max(4096).default(32),
  /**
   * The image watermark keys, `kid:hex,kid:hex` or JSON `[{"kid","key"}]` (32-byte keys, 64 hex): the first marks new
   * images, the rest are still detected (rotation); every mark records its key id. Required in production; unset in
   * development, the service generates one and keeps it sealed in its schema (app/keyring.ts). See
   * services/watermark/docs/keys.md.
   * @default development: a generated key, sealed in the watermark schema
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
