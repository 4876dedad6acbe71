import { z } from 'zod';
import { storedManifestConfigShape } from '@cairn/config';
import { mediaLimitsConfigShape } from '@cairn/media';

/** Soft-binding settings (the common ones come from @cairn/config). */
export const softbindingConfigShape = {
  /** What a fingerprint decodes at most (MEDIA_MAX_*), checked from the headers first. */
  ...mediaLimitsConfigShape,
  /** Where signed assets and uploads are: the gateway's `BLOB_STORE_URL`, shared. */
  BLOB_STORE_URL: z.string().default('file:///tmp/cairn/blobs'),
  /** Most matches a lookup answers. */
  LOOKUP_MAX_RESULTS: z.coerce.number().int().min(1).max(100).default(10),
  /**
   * Image and video-frame hashes held in memory for lookup (about 110 bytes each; 0: search Postgres only). A
   * tenant beyond its share, or any row beyond the total, sends that tenant's lookups (and public ones) to Postgres.
   */
  FINGERPRINT_MEMORY_MAX_ROWS: z.coerce.number().int().min(0).default(2_000_000),
  FINGERPRINT_MEMORY_MAX_ROWS_PER_TENANT: z.coerce.number().int().min(0).default(1_500_000),
  /** The resolution API's manifest size limit, shared with the gateway. */
  ...storedManifestConfigShape,
  /**
   * Most manifests one tenant may keep in the resolution API's repository (429 `cairn.resolution.quota_exceeded` past it, until it deletes some):
   * with the size limit, what a tenant can make Postgres hold.
   */
  STORED_MANIFESTS_MAX_PER_TENANT: z.coerce.number().int().min(1).default(1000),
  /**
   * How often the in-memory index reads rows another process added (this one's own are held at once) while rows
   * arrive, read there or indexed here.
   */
  FINGERPRINT_CATCH_UP_MS: z.coerce.number().int().min(100).default(5000),
  /**
   * The catch-up's longest wait: with no rows arriving it doubles up to this. A replica sees another's first new
   * row after a quiet spell within this, later ones within FINGERPRINT_CATCH_UP_MS.
   */
  FINGERPRINT_CATCH_UP_MAX_MS: z.coerce.number().int().min(100).max(600_000).default(30_000),
};
