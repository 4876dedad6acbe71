/**
 * A bounded CBOR (RFC 8949) reader for the few assertion fields the repository indexes: maps, arrays, text and
 * byte strings, integers, simple values and tags (skipped over). Hostile input: every length is checked against
 * the bytes left, nesting is capped, and anything else (floats, indefinite lengths) is refused with an Error.
 */
export type CborValue = number | bigint | string | Uint8Array | boolean | null | undefined | CborValue[] | CborMap;
export interface CborMap {
  [key: string]: CborValue;
}

const MAX_DEPTH = 16;
const MAX_ITEMS = 10_000;

export function decodeCbor(bytes: Uint8Array): CborValue {
  const state = { at: 0, items: 0 };
  const value = item(bytes, state, 0);
  if (state.at !== bytes.length) throw new Error('trailing bytes after the CBOR item');
  return value;
}

function length(bytes: Uint8Array, state: { at: number }, info: number): number {
  if (info < 24) return info;
  const size = info === 24 ? 1 : info === 25 ? 2 : info === 26 ? 4 : info === 27 ? 8 : 0;
  if (size === 0) throw new Error('indefinite or reserved CBOR length');
  if (state.at + size > bytes.length) throw new Error('CBOR length past the end');
  let n = 0;
  for (let i = 0; i < size; i++) n = n * 256 + (bytes[state.at + i] ?? 0);
  state.at += size;
  if (!Number.isSafeInteger(n)) throw new Error('CBOR length too large');
  return n;
}

function item(bytes: Uint8Array, state: { at: number; items: number }, depth: number): CborValue {
  if (depth > MAX_DEPTH) throw new Error('CBOR nested too deeply');
  if (++state.items > MAX_ITEMS) throw new Error('too many CBOR items');
  if (state.at >= bytes.length) throw new Error('CBOR ends early');
  const head = bytes[state.at++]!;
  const major = head >> 5;
  const info = head & 0x1f;
  switch (major) {
    case 0:
      return length(bytes, state, info);
    case 1:
      return -1 - length(bytes, state, info);
    case 2:
    case 3: {
      const n = length(bytes, state, info);
      if (state.at + n > bytes.length) throw new Error('CBOR string past the end');
      const slice = bytes.subarray(state.at, state.at + n);
      state.at += n;
      return major === 2 ? slice : Buffer.from(slice).toString('utf8');
    }
    case 4: {
      const n = length(bytes, state, info);
      const out: CborValue[] = [];
      for (let i = 0; i < n; i++) out.push(item(bytes, state, depth + 1));
      return out;
    }
    case 5: {
      const n = length(bytes, state, info);
      const out: CborMap = Object.create(null) as CborMap;
      for (let i = 0; i < n; i++) {
        const key = item(bytes, state, depth + 1);
        const value = item(bytes, state, depth + 1);
        if (typeof key === 'string' || typeof key === 'number') out[String(key)] = value;
      }
      return out;
    }
    case 6:
      length(bytes, state, info);
      return item(bytes, state, depth + 1);
    default:
      if (info === 20) return false;
      if (info === 21) return true;
      if (info === 22) return null;
      if (info === 23) return undefined;
      throw new Error('unsupported CBOR simple value or float');
  }
}
