import { createHash } from 'node:crypto';
import { z } from 'zod';
import { publicUrlSetting } from '@cairn/config';
import { mediaLimitsConfigShape } from '@cairn/media';

/**
 * PKI settings of the signer, part of signerConfigShape; service.ts passes the parsed result to
 * `pkiSettingsFromConfig`.
 */
export const pkiConfigShape = {
  /**
   * 64 hex (32 bytes): the key-encryption key sealing the CA and software signing keys at rest; required in
   * production.
   * @default a fixed development key
   */
  SIGNER_KEK: z
    .string()
    .regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hex characters')
    .optional(),
  /** O= of every certificate the signer issues. */
  SIGNER_ORG: z.string().min(1).max(64).default('Cairn'),
  /**
   * Where the signing (leaf) key lives: `pkcs11`, the signing key is generated on the token and never leaves it
   * (`SIGNER_PKCS11_MODULE`, `_TOKEN`, `_PIN`, `_KEY_LABEL`). CA keys are always software keys sealed under
   * `SIGNER_KEK`.
   */
  SIGNER_KEY_BACKEND: z.enum(['software', 'pkcs11']).default('software'),
  /** The PKCS#11 module (shared library) of the token. */
  SIGNER_PKCS11_MODULE: z.string().default('/usr/lib/softhsm/libsofthsm2.so'),
  /** Token label (CKA_LABEL of the token, not a slot number: slot ids change when tokens are added). */
  SIGNER_PKCS11_TOKEN: z.string().optional(),
  /** The token's user PIN. */
  SIGNER_PKCS11_PIN: z.string().optional(),
  /** Prefix of the labels of keys generated on the token; each signing certificate gets `<prefix>-<serial>`. */
  SIGNER_PKCS11_KEY_LABEL: z.string().min(1).default('cairn-signing'),
  /**
   * Validity of each signing certificate, and how many days before its end a new one is issued and activated
   * (signing certificates rotate without downtime; signs in flight keep the key they loaded).
   */
  SIGNER_CERT_VALIDITY_DAYS: z.coerce.number().int().min(1).max(3650).default(365),
  SIGNER_ROTATE_BEFORE_DAYS: z.coerce.number().int().min(0).default(30),
  /** `certificate.expiring` is announced (once) this many days before a signing certificate's notAfter. */
  SIGNER_EXPIRY_NOTICE_DAYS: z.coerce.number().int().min(0).default(30),
  /** How often a replica re-reads which signing key is active (another replica may have rotated or revoked). */
  SIGNER_ACTIVE_KEY_RECHECK_MS: z.coerce.number().int().min(0).default(1000),
  /**
   * The OCSP responder's URL, written into every signing certificate (AIA), so verifiers must reach it: in
   * production a public https URL, like `PUBLIC_BASE_URL` (put the responder behind your https ingress or load
   * balancer).
   */
  OCSP_PUBLIC_URL: publicUrlSetting('http://127.0.0.1:9471/ocsp', 'written into every signing certificate'),
  /**
   * Cairn's RFC 3161 time-stamping authority, served at this URL's path on the OCSP port (`POST`,
   * `application/timestamp-query`); the signer's own signs reach it on its listener directly, so the URL is for
   * outside clients and names the mount path.
   * @default `OCSP_PUBLIC_URL`'s origin + `/tsa`
   */
  TSA_PUBLIC_URL: z.string().url().optional(),
  /**
   * An external RFC 3161 time-stamping authority every manifest is stamped by instead of Cairn's own; its
   * certificate must chain to an anchor of the verifiers' trust list (the C2PA TSA Trust List, or a configured
   * anchor). A sign whose time-stamp fails is refused with 503 `cairn.signer.unavailable`, never signed without one;
   * c2pa-rs sets no timeout on the request, so a TSA that never answers is cut off by `SIGN_WORKER_TIMEOUT_MS` (503
   * `cairn.sign.worker_failed`).
   * @default unset: Cairn's own TSA
   */
  TSA_URL: z.string().url().optional(),
  /**
   * Time-stamp grants per second (burst twice that) on the public TSA path, per replica; beyond it 429 with
   * `Retry-After`, before the body is read (each grant costs an ECDSA signature, about 2 ms). The signer's own signs
   * are stamped on a random path of their own and never limited. `0`: the TSA serves the signer only (the public
   * path is 404).
   */
  TSA_PUBLIC_REQUESTS_PER_SECOND: z.coerce.number().int().min(0).max(10_000).default(20),
  /**
   * Listen address of the OCSP responder (and the TSA).
   * @default `GRPC_HOST`
   */
  OCSP_HOST: z.string().optional(),
  /** Port of the OCSP responder (and the TSA). */
  OCSP_PORT: z.coerce.number().int().min(0).max(65535).default(9471),
  /** nextUpdate − thisUpdate of OCSP responses: how long a verifier may cache "good". */
  OCSP_RESPONSE_VALIDITY_SECONDS: z.coerce
    .number()
    .int()
    .min(60)
    .max(7 * 86400)
    .default(3600),
} as const;

/** A PKCS#11 token holding the signing keys (SIGNER_KEY_BACKEND=pkcs11). */
export interface Pkcs11Config {
  /** Path of the PKCS#11 module, e.g. /usr/lib/softhsm/libsofthsm2.so. */
  readonly modulePath: string;
  /** Label of the token (slot ids are not stable across token changes; labels are). */
  readonly tokenLabel: string;
  readonly pin: string;
}

export type PkiConfig = z.output<z.ZodObject<typeof pkiConfigShape>>;

export interface PkiSettings {
  readonly org: string;
  /** 32 bytes. */
  readonly kek: Buffer;
  readonly keyBackend: 'software' | 'pkcs11';
  /** Present when keyBackend is 'pkcs11'. */
  readonly pkcs11?: Pkcs11Config;
  readonly pkcs11KeyLabelPrefix: string;
  readonly ocspPublicUrl: string;
  readonly tsaPublicUrl: string;
  /** An external TSA (TSA_URL) stamping every manifest; unset: Cairn's own. */
  readonly tsaUrl?: string;
  /** Grants per second on the public TSA path (0: not served publicly). */
  readonly tsaPublicRequestsPerSecond: number;
  readonly leafValidityDays: number;
  readonly rotateBeforeDays: number;
  readonly expiryNoticeDays: number;
  readonly activeKeyRecheckMs: number;
  readonly ocspResponseValiditySeconds: number;
}

/** Development runs without configuring a KEK; production must never silently use this one. */
export function resolveKek(env: 'development' | 'production', configured: string | undefined): Buffer {
  if (configured) return Buffer.from(configured, 'hex');
  if (env === 'production') throw new Error('SIGNER_KEK is required in production (64 hex characters).');
  return createHash('sha256').update('cairn-development-signer-kek').digest();
}

/** Checks the combinations zod cannot express per variable; throws at start so a bad deployment fails early. */
export function pkiSettingsFromConfig(config: PkiConfig & { CAIRN_ENV: 'development' | 'production' }): PkiSettings {
  const problems: string[] = [];
  let pkcs11: Pkcs11Config | undefined;
  if (config.SIGNER_KEY_BACKEND === 'pkcs11') {
    if (!config.SIGNER_PKCS11_TOKEN) problems.push('SIGNER_PKCS11_TOKEN is required when SIGNER_KEY_BACKEND=pkcs11');
    if (!config.SIGNER_PKCS11_PIN) problems.push('SIGNER_PKCS11_PIN is required when SIGNER_KEY_BACKEND=pkcs11');
    if (config.SIGNER_PKCS11_TOKEN && config.SIGNER_PKCS11_PIN) {
      pkcs11 = {
        modulePath: config.SIGNER_PKCS11_MODULE,
        tokenLabel: config.SIGNER_PKCS11_TOKEN,
        pin: config.SIGNER_PKCS11_PIN,
      };
    }
  }
  // Otherwise every new certificate would be due for rotation the moment it is issued.
  if (config.SIGNER_CERT_VALIDITY_DAYS <= config.SIGNER_ROTATE_BEFORE_DAYS) {
    problems.push('SIGNER_CERT_VALIDITY_DAYS must be greater than SIGNER_ROTATE_BEFORE_DAYS');
  }
  if (problems.length > 0) throw new Error(`Invalid signer PKI configuration:\n  ${problems.join('\n  ')}`);
  return {
    org: config.SIGNER_ORG,
    kek: resolveKek(config.CAIRN_ENV, config.SIGNER_KEK),
    keyBackend: config.SIGNER_KEY_BACKEND,
    ...(pkcs11 ? { pkcs11 } : {}),
    pkcs11KeyLabelPrefix: config.SIGNER_PKCS11_KEY_LABEL,
    ocspPublicUrl: config.OCSP_PUBLIC_URL,
    tsaPublicUrl: config.TSA_PUBLIC_URL ?? new URL('/tsa', config.OCSP_PUBLIC_URL).toString(),
    ...(config.TSA_URL ? { tsaUrl: config.TSA_URL } : {}),
    tsaPublicRequestsPerSecond: config.TSA_PUBLIC_REQUESTS_PER_SECOND,
    leafValidityDays: config.SIGNER_CERT_VALIDITY_DAYS,
    rotateBeforeDays: config.SIGNER_ROTATE_BEFORE_DAYS,
    expiryNoticeDays: config.SIGNER_EXPIRY_NOTICE_DAYS,
    activeKeyRecheckMs: config.SIGNER_ACTIVE_KEY_RECHECK_MS,
    ocspResponseValiditySeconds: config.OCSP_RESPONSE_VALIDITY_SECONDS,
  };
}

/** Signer settings (the common ones come from @cairn/config). */
export const signerConfigShape = {
  ...pkiConfigShape,
  /** What a sign decodes at most (MEDIA_MAX_*), checked from the upload's headers first. */
  ...mediaLimitsConfigShape,
  /**
   * Builds `manifest_uri`, `verifier_url` and `asset_url`: the gateway's public address (its `PUBLIC_BASE_URL`);
   * in production a public https URL.
   */
  PUBLIC_BASE_URL: publicUrlSetting('http://127.0.0.1:8080', 'written into every manifest_uri and verifier_url'),
  /** Where uploads, derived assets and manifest stores are: the gateway's `BLOB_STORE_URL`, shared. */
  BLOB_STORE_URL: z.string().default('file:///tmp/cairn/blobs'),
  /** How often derived assets past their retention are deleted. */
  ASSET_SWEEP_INTERVAL_MS: z.coerce.number().int().positive().default(60_000),
  /** How often rotation and certificate.expiring are checked. */
  PKI_CHECK_INTERVAL_MS: z.coerce.number().int().positive().default(3_600_000),
  /**
   * Attempts of an async sign (a worker crash or timeout counts as one) before it ends `failed` with its problem and
   * one `job.failed`.
   */
  SIGN_JOB_MAX_ATTEMPTS: z.coerce.number().int().min(1).max(20).default(3),
  /**
   * How long a video sign job waits, within one attempt, for a watermark service that went away mid-marking (a
   * restart, a rollout) before that attempt fails; the marking is asked again, same watermark id, as soon as the
   * service answers; `0`: not at all.
   */
  SIGN_JOB_WATERMARK_WAIT_MS: z.coerce.number().int().min(0).default(30_000),
  /**
   * Sign is idempotent by its caller-chosen asset id: a recorded id answers its recorded result (nothing signed,
   * written or published again); while a sign of that id runs, another is 409 `cairn.idempotency.in_progress`; a
   * claim left by a signer killed mid-sign lapses after this and the retry takes it over.
   */
  ASSET_CLAIM_LEASE_SECONDS: z.coerce.number().int().min(1).max(3600).default(180),
  /**
   * C2PA signing runs in this many child processes (c2pa-rs parses and rewrites the upload there; the key stays in
   * the signer), each sign with this budget, each child with this V8 heap (MiB); a sign past the budget, or whose
   * child dies, is one 503 `cairn.sign.worker_failed` and the child is replaced.
   */
  SIGN_WORKERS: z.coerce.number().int().min(1).max(32).default(2),
  SIGN_WORKER_TIMEOUT_MS: z.coerce.number().int().positive().default(60_000),
  SIGN_WORKER_MAX_OLD_SPACE_MB: z.coerce.number().int().min(64).default(512),
  /** Budget of one signature from a tenant's own signing endpoint (BYOK); past it: 503 `cairn.signer.unavailable`. */
  BYOK_SIGN_TIMEOUT_MS: z.coerce.number().int().positive().default(5_000),
  /**
   * Whether BYOK signing endpoints may be on loopback (a local test endpoint); private, link-local and metadata
   * addresses are refused either way, and production takes https only.
   * @default `true` in development, `false` in production
   */
  OUTBOUND_ALLOW_LOOPBACK: z.enum(['true', 'false']).optional(),
};
