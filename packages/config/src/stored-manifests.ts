import { z } from 'zod';

/** The resolution API's manifest size limit: the gateway and the soft-binding service read the one setting. */
export const storedManifestConfigShape = {
  /**
   * Largest manifest store a tenant may keep in the resolution API's repository (`POST /c2pa/v1/manifests`, 413
   * above: the gateway reads no further, the soft-binding service stores none larger); give both the same value.
   */
  STORED_MANIFEST_MAX_BYTES: z.coerce
    .number()
    .int()
    .min(1024)
    .max(64 * 1024 * 1024)
    .default(2 * 1024 * 1024),
};
