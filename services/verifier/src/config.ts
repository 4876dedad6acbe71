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
  /** A stored verdict older than this is recomputed from Cairn's copy even when no event announced a change. */
  VERIFY_RESULT_FRESH_SECONDS: z.coerce.number().int().positive().default(600),
  /**
   * Whether OCSP requests may reach loopback addresses (Cairn's own responder on this machine). Unset: allowed in
   * development, refused in production. Private, link-local and metadata addresses are refused either way.
   */
  OUTBOUND_ALLOW_LOOPBACK: z.enum(['true', 'false']).optional(),
};
