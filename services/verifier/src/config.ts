import { z } from 'zod';
import { publicUrlSetting } from '@cairn/config';
import { mediaLimitsConfigShape } from '@cairn/media';

/** Verifier settings (the common ones come from @cairn/config). */
export const verifierConfigShape = {
  /** What a verify decodes at most (MEDIA_MAX_*), checked from the file's headers first. */
  ...mediaLimitsConfigShape,
  /** The gateway's public address (its `PUBLIC_BASE_URL`), for the links in verdicts; in production public https. */
  PUBLIC_BASE_URL: publicUrlSetting('http://127.0.0.1:8080', 'the links in verdicts'),
  /** Where uploads, derived assets and manifest stores are: the gateway's `BLOB_STORE_URL`, shared. */
  BLOB_STORE_URL: z.string().default('file:///tmp/cairn/blobs'),
  /** PEM bundle of further trust anchors added to the default trust list. */
  TRUST_ANCHORS_FILE: z.string().optional(),
  /**
   * The C2PA Trust List and TSA Trust List in the default trust list: `builtin` (the copies shipped in
   * `services/verifier/src/trust-lists/`, with their source and date), `none`, a PEM file or the C2PA's JSON list
   * (`C2PA-TRUST-LIST.json`, whose `ListIssueDateTime` validation reports name), or an http(s) URL fetched through
   * the outbound policy (https only in production); a list that cannot be read keeps the last good copy.
   */
  C2PA_TRUST_LIST: z.string().min(1).default('builtin'),
  C2PA_TSA_TRUST_LIST: z.string().min(1).default('builtin'),
  /**
   * The frozen interim trust list of the Content Authenticity Initiative (the contentcredentials.org verify site's
   * list before the official C2PA Trust List) in the default trust list, asked after the official lists: a signer
   * chaining only to it verifies as trusted with the warning `interim_trust_list`. `builtin` (the copy in
   * `services/verifier/src/trust-lists/`), `none`, a PEM file or an http(s) URL, as above.
   */
  C2PA_INTERIM_TRUST_LIST: z.string().min(1).default('builtin'),
  /**
   * Attempts of an asynchronous verify (a peer that stays away, a verifier that dies on it) before it ends `failed`
   * with `job.failed`.
   */
  VERIFY_JOB_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(10).default(3),
  /** How often a URL trust list is fetched again (a file list is re-read every minute). */
  TRUST_LIST_REFRESH_SECONDS: z.coerce.number().int().positive().default(86_400),
  /** Budget of one OCSP request about a signing certificate; a responder that does not answer is `ocsp_unavailable`. */
  OCSP_TIMEOUT_MS: z.coerce.number().int().positive().default(2000),
  /**
   * c2pa-rs runs in these many child processes with this budget per file, so a hostile file cannot take the verifier
   * down.
   */
  C2PA_READERS: z.coerce.number().int().min(1).max(8).default(2),
  C2PA_READ_TIMEOUT_MS: z.coerce.number().int().positive().default(5000),
  /**
   * Memory for the C2PA readings of Cairn's own signed files (a few tens of KiB each), so a verify of the very bytes
   * Cairn signed, under the same trust list, skips the reader (app/verify/reading-memo.ts,
   * [decisions/0011](decisions/0011-reuse-readings-of-cairn-copies.md)); `0` keeps none.
   */
  C2PA_READING_MEMO_MIB: z.coerce.number().int().min(0).max(4096).default(32),
  /**
   * Memory for the kept answers of OCSP, the anchor check and the asset's public record (a few hundred bytes each),
   * so a verify asks only what may have changed since (app/verify/signal-cache.ts; kept until `certificate.revoked`
   * or their age, [decisions/0012](decisions/0012-signal-answers-kept-until-their-event.md)); `0` keeps none.
   */
  VERIFY_SIGNAL_CACHE_MIB: z.coerce.number().int().min(0).max(1024).default(8),
  /**
   * The longest any of those answers is kept, even when no event ends it sooner (an OCSP answer also ends at its
   * nextUpdate); 0 keeps none. At most 300: a `certificate.revoked` the verifiers could not act on (Redis away
   * through all of its deliveries, about 7 minutes) then finds every answer kept before it already past this age.
   */
  VERIFY_SIGNAL_CACHE_SECONDS: z.coerce.number().int().min(0).max(300).default(300),
  /**
   * A stored verdict (`/v/`, `GET /v1/verify/{id}`) older than this is recomputed from Cairn's copy even when no
   * event announced a change.
   */
  VERIFY_RESULT_FRESH_SECONDS: z.coerce.number().int().positive().default(600),
  /**
   * Whether OCSP requests may reach loopback addresses (the signer's responder on this machine). Private,
   * link-local and metadata addresses are refused either way.
   * @default `true` in development, `false` in production
   */
  OUTBOUND_ALLOW_LOOPBACK: z.enum(['true', 'false']).optional(),
  /**
   * When above 0, a newly signed asset's stored verdict waits until no asset has been signed for this long (at most
   * 256 wait), so it never runs beside the next sign (app/new-verdicts.ts); a read before then computes it itself.
   * 0 (the default) computes it as asset.signed is handled: deferring it cuts a lone sign's latency on a busy
   * machine (up to 40% measured) but not a burst's, which lowers the c8/c1 sign throughput ratio (docs/performance.md).
   */
  VERIFY_NEW_VERDICT_QUIET_MS: z.coerce.number().int().min(0).max(60_000).default(0),
};
