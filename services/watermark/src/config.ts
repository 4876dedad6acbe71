import { z } from 'zod';
import { defaultPoolSize } from './domain/pool.js';

/** watermark-only settings (the common ones come from @cairn/config). */
export const watermarkConfigShape = {
  /** Worker threads for embedding and detection; by default one per core but one, which serves gRPC. */
  WATERMARK_WORKERS: z.coerce.number().int().min(1).max(64).default(defaultPoolSize()),
};
