import { WATERMARK_KEY_BYTES } from './image/cairn-dct-keyed-v1.js';

/** A watermark embedding key and the id marks record, so a rotated-out key can still be told apart. */
export interface WatermarkKey {
  readonly kid: string;
  /** WATERMARK_KEY_BYTES of secret. */
  readonly secret: Uint8Array;
}

/** The keys a service holds: `current` signs new marks; every key in `all` (current first) is detected. */
export interface Keyring {
  readonly current: WatermarkKey;
  readonly all: ReadonlyArray<WatermarkKey>;
}

/** A key id: short, printable, safe in logs, metrics and the registry. */
export const KID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
const KEY_HEX = new RegExp(`^[0-9a-fA-F]{${WATERMARK_KEY_BYTES * 2}}$`);

/**
 * Parses WATERMARK_KEYS: `kid:hex,kid:hex` or JSON `[{"kid": "...", "key": "hex"}, ...]`, the first the current
 * key. Answers the keys or the problems (never echoing a secret), so config validation can list them all.
 */
export function parseWatermarkKeys(
  text: string,
): { ok: true; keys: WatermarkKey[] } | { ok: false; problems: string[] } {
  const trimmed = text.trim();
  let entries: Array<{ kid: unknown; key: unknown }>;
  if (trimmed.startsWith('[')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(trimmed);
    } catch {
      return { ok: false, problems: ['is not valid JSON'] };
    }
    if (!Array.isArray(parsed)) return { ok: false, problems: ['must be a JSON array of {"kid", "key"}'] };
    entries = parsed.map((entry: unknown) =>
      typeof entry === 'object' && entry !== null
        ? { kid: (entry as Record<string, unknown>).kid, key: (entry as Record<string, unknown>).key }
        : { kid: undefined, key: undefined },
    );
  } else {
    entries = trimmed.split(',').map((part) => {
      const colon = part.indexOf(':');
      return colon < 0
        ? { kid: part.trim(), key: undefined }
        : { kid: part.slice(0, colon).trim(), key: part.slice(colon + 1).trim() };
    });
  }
  const problems: string[] = [];
  const keys: WatermarkKey[] = [];
  const seen = new Set<string>();
  entries.forEach(({ kid, key }, i) => {
    const where = `entry ${i + 1}`;
    if (typeof kid !== 'string' || !KID_PATTERN.test(kid)) {
      problems.push(`${where}: the key id must be 1-64 of A-Z a-z 0-9 . _ - (starting with a letter or digit)`);
      return;
    }
    if (seen.has(kid)) problems.push(`${where}: key id "${kid}" appears twice`);
    seen.add(kid);
    if (typeof key !== 'string' || !KEY_HEX.test(key)) {
      problems.push(`${where} ("${kid}"): the key must be ${WATERMARK_KEY_BYTES * 2} hex characters`);
      return;
    }
    keys.push({ kid, secret: Uint8Array.from(Buffer.from(key, 'hex')) });
  });
  if (entries.length === 0) problems.push('lists no key');
  return problems.length > 0 ? { ok: false, problems } : { ok: true, keys };
}
