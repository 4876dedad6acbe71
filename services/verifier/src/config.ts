import { z } from 'zod';

/** Verifier settings (the common ones come from @cairn/config). */
export const verifierConfigShape = {
  PUBLIC_BASE_URL: z.string().url().default('http://127.0.0.1:8080'),
  BLOB_STORE_URL: z.string().default('file:///tmp/cairn/blobs'),
  /** PEM bundle of registered C2PA trust anchors added to Cairn's own root in the default trust list. */
  TRUST_ANCHORS_FILE: z.string().optional(),
  OCSP_TIMEOUT_MS: z.coerce.number().int().positive().default(2000),
  /** Parser processes isolating c2pa-rs from hostile files, and each read's time budget. */
  C2PA_READERS: z.coerce.number().int().min(1).max(8).default(2),
  C2PA_READ_TIMEOUT_MS: z.coerce.number().int().positive().default(5000),
};
