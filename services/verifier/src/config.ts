import { z } from 'zod';
import { mediaLimitsConfigShape } from '@cairn/media';

/** Verifier settings (the common ones come from @cairn/config). */
export const verifierConfigShape = {
  /** What a verify decodes at most (MEDIA_MAX_*), checked from the file's headers first. */
  ...mediaLimitsConfigShape,
  PUBLIC_BASE_URL: z.string().url().default('http://127.0.0.1:8080'),
  BLOB_STORE_URL: z.string().default('file:///tmp/cairn/blobs'),
  /** PEM bundle of further trust anchors added to the default trust list. */
  TRUST_ANCHORS_FILE: z.string().optional(),
  /**
   * The C2PA Trust List and TSA Trust List in the default list: `builtin` (the copies shipped in src/trust-lists),
   * `none`, a PEM file path, or an http(s) URL fetched through the outbound policy.
   */
  C2PA_TRUST_LIST: z.string().min(1).default('builtin'),
  C2PA_TSA_TRUST_LIST: z.string().min(1).default('builtin'),
  /** Attempts of an asynchronous verify before it ends `failed` (a peer that stays away, a verifier that dies on it). */
  VERIFY_JOB_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(10).default(3),
  /** How often a URL trust list is fetched again. */
  TRUST_LIST_REFRESH_SECONDS: z.coerce.number().int().positive().default(86_400),
  OCSP_TIMEOUT_MS: z.coerce.number().int().positive().default(2000),
  /** Parser processes isolating c2pa-rs from hostile files, and each read's time budget. */
  C2PA_READERS: z.coerce.number().int().min(1).max(8).default(2),
  C2PA_READ_TIMEOUT_MS: z.coerce.number().int().positive().default(5000),
  /**
   * Memory for the C2PA readings of Cairn's own signed files (a few tens of KiB each), so a verify of the very bytes
   * Cairn signed skips the reader (app/verify/reading-memo.ts); 0 keeps none.
   */
  C2PA_READING_MEMO_MIB: z.coerce.number().int().min(0).max(4096).default(32),
  /** A stored verdict older than this is recomputed from Cairn's copy even when no event announced a change. */
  VERIFY_RESULT_FRESH_SECONDS: z.coerce.number().int().positive().default(600),
  /**
   * Whether OCSP requests may reach loopback addresses (Cairn's own responder on this machine). Unset: allowed in
   * development, refused in production. Private, link-local and metadata addresses are refused either way.
   */
  OUTBOUND_ALLOW_LOOPBACK: z.enum(['true', 'false']).optional(),
};
