import { randomBytes } from 'node:crypto';
import { encodeTime } from 'ulid';

/**
 * The id prefixes (docs/decisions/0007-identifiers-and-blob-keys.md); every public identifier is one of these followed
 * by a ULID.
 */
export const ID_PREFIXES = {
  asset: 'a_',
  watermark: 'w_',
  batch: 'b_',
  job: 'j_',
  tenant: 't_',
  key: 'key_',
  webhook: 'wh_',
  event: 'evt_',
  request: 'req_',
  manifest: 'm_',
  delivery: 'dlv_',
  entry: 'ae_',
  credential: 'sc_',
  upload: 'up_',
  storedManifest: 'sm_',
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

const ULID_PATTERN = '[0-9A-HJKMNP-TV-Z]{26}';
/**
 * Public ids are capabilities (an asset id opens its /v/ page and thumbnail), so each one draws 80 fresh random bits
 * after its millisecond timestamp. A monotonic ULID would mint ids within one millisecond as increments of one
 * another, so a caller holding one id could guess its neighbours. Ids therefore sort by millisecond only: nothing
 * may order by id within a millisecond (chains and pages use their own sequence columns).
 */
export function newId(kind: IdKind): string {
  return ID_PREFIXES[kind] + encodeTime(Date.now(), 10) + randomPart();
}

/** Crockford's base32, the ULID alphabet. */
const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';

/**
 * A ULID's 16 random characters: 80 bits from one read of the CSPRNG, five bits a character (the ulid package's own
 * generator reads one byte per character, and scales it with a slight bias).
 */
function randomPart(): string {
  const bytes = randomBytes(10);
  let out = '';
  // Two groups of 40 bits (exact in a double), eight characters each, most significant first.
  for (const offset of [0, 5]) {
    const group = bytes[offset]! * 2 ** 32 + bytes.readUInt32BE(offset + 1);
    for (let shift = 35; shift >= 0; shift -= 5) out += CROCKFORD[Math.floor(group / 2 ** shift) % 32];
  }
  return out;
}

export function isId(kind: IdKind, value: string): boolean {
  return new RegExp(`^${ID_PREFIXES[kind]}${ULID_PATTERN}$`).test(value);
}

/** URL-safe random secret: `bytes` of entropy, base64url without padding. */
export function randomSecret(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

export function newWebhookSecret(): string {
  return 'whsec_' + randomSecret(32);
}

const API_KEY_PREFIX = 'cairn_sk_';
const API_KEY_PATTERN = new RegExp(`^${API_KEY_PREFIX}(key_${ULID_PATTERN})_([A-Za-z0-9_-]{43})$`);

/** `cairn_sk_` + key id + `_` + 32 random bytes. The key id lets the server find the stored hash. */
export function newApiKey(): { keyId: string; apiKey: string; secret: string } {
  const keyId = newId('key');
  const secret = randomSecret(32);
  return { keyId, apiKey: `${API_KEY_PREFIX}${keyId}_${secret}`, secret };
}

export function parseApiKey(apiKey: string): { keyId: string; secret: string } | null {
  const m = API_KEY_PATTERN.exec(apiKey);
  return m && m[1] && m[2] ? { keyId: m[1], secret: m[2] } : null;
}
