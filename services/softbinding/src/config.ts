import { z } from 'zod';
import { mediaLimitsConfigShape } from '@cairn/media';

/** Soft-binding settings (the common ones come from @cairn/config). */
export const softbindingConfigShape = {
  /** What a fingerprint decodes at most (MEDIA_MAX_*), checked from the headers first. */
  ...mediaLimitsConfigShape,
  /** Where signed assets and uploads are (shared with the gateway, signer and verifier). */
  BLOB_STORE_URL: z.string().default('file:///tmp/cairn/blobs'),
  /** Most matches a lookup answers. */
  LOOKUP_MAX_RESULTS: z.coerce.number().int().min(1).max(100).default(10),
};
