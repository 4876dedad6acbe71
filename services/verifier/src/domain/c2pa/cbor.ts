// A small, bounded CBOR (RFC 8949) decoder: just enough to read a COSE_Sign1 header out of a manifest's
// signature box. c2pa-node does not expose the certificate chain, so the verifier reads x5chain itself.
// Input is attacker-controlled: nesting depth and lengths are checked, nothing is trusted.

export type CborValue =
  | number
  | bigint
  | string
  | boolean
  | null
  | undefined
  | Uint8Array
  | CborValue[]
  | Map<CborValue, CborValue>
  | CborTagged;

export interface CborTagged {
  tag: number | bigint;
  value: CborValue;
}

export class CborError extends Error {
  override readonly name = 'CborError';
}

const MAX_DEPTH = 32;

class Decoder {
  private offset = 0;
  constructor(private readonly bytes: Uint8Array) {}

  get position(): number {
    return this.offset;
  }

  private need(n: number): void {
    if (n < 0 || this.offset + n > this.bytes.length) throw new CborError('truncated CBOR');
  }

  private u8(): number {
    this.need(1);
    return this.bytes[this.offset++] as number;
  }

  private uint(info: number): number | bigint {
    if (info < 24) return info;
    const view = new DataView(this.bytes.buffer, this.bytes.byteOffset + this.offset);
    switch (info) {
      case 24:
        this.need(1);
        this.offset += 1;
        return view.getUint8(0);
      case 25:
        this.need(2);
        this.offset += 2;
        return view.getUint16(0);
      case 26:
        this.need(4);
        this.offset += 4;
        return view.getUint32(0);
      case 27: {
        this.need(8);
        this.offset += 8;
        const big = view.getBigUint64(0);
        return big <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(big) : big;
      }
      default:
        throw new CborError(`unsupported CBOR additional info ${info}`);
    }
  }

  private length(info: number): number {
    if (info === 31) throw new CborError('indefinite-length CBOR is not supported');
    const n = this.uint(info);
    if (typeof n === 'bigint' || n > this.bytes.length) throw new CborError('CBOR length out of range');
    return n;
  }

  /** Whether an indefinite-length item ends here (the break byte, consumed). */
  private atBreak(): boolean {
    this.need(1);
    if (this.bytes[this.offset] !== 0xff) return false;
    this.offset++;
    return true;
  }

  /** An indefinite-length string: definite chunks of the same major type up to the break (RFC 8949 3.2.3). */
  private chunks(major: 2 | 3): Uint8Array {
    const parts: Uint8Array[] = [];
    while (!this.atBreak()) {
      const initial = this.u8();
      if (initial >> 5 !== major || (initial & 0x1f) === 31) throw new CborError('malformed indefinite-length string');
      const n = this.length(initial & 0x1f);
      this.need(n);
      parts.push(this.bytes.subarray(this.offset, this.offset + n));
      this.offset += n;
    }
    return Buffer.concat(parts);
  }

  decode(depth = 0): CborValue {
    if (depth > MAX_DEPTH) throw new CborError('CBOR nested too deeply');
    const initial = this.u8();
    const major = initial >> 5;
    const info = initial & 0x1f;
    // Indefinite lengths (C2PA v1 claims use them): each item takes at least one byte, so the input bounds them.
    if (info === 31) {
      switch (major) {
        case 2:
          return this.chunks(2);
        case 3:
          return Buffer.from(this.chunks(3)).toString('utf8');
        case 4: {
          const out: CborValue[] = [];
          while (!this.atBreak()) out.push(this.decode(depth + 1));
          return out;
        }
        case 5: {
          const out = new Map<CborValue, CborValue>();
          while (!this.atBreak()) {
            const key = this.decode(depth + 1);
            out.set(key, this.decode(depth + 1));
          }
          return out;
        }
        default:
          break;
      }
    }
    switch (major) {
      case 0:
        return this.uint(info);
      case 1: {
        const n = this.uint(info);
        return typeof n === 'bigint' ? -1n - n : -1 - n;
      }
      case 2: {
        const n = this.length(info);
        this.need(n);
        const out = this.bytes.subarray(this.offset, this.offset + n);
        this.offset += n;
        return out;
      }
      case 3: {
        const n = this.length(info);
        this.need(n);
        const out = Buffer.from(this.bytes.buffer, this.bytes.byteOffset + this.offset, n).toString('utf8');
        this.offset += n;
        return out;
      }
      case 4: {
        const n = this.length(info);
        const out: CborValue[] = [];
        for (let i = 0; i < n; i++) out.push(this.decode(depth + 1));
        return out;
      }
      case 5: {
        const n = this.length(info);
        const out = new Map<CborValue, CborValue>();
        for (let i = 0; i < n; i++) {
          const key = this.decode(depth + 1);
          out.set(key, this.decode(depth + 1));
        }
        return out;
      }
      case 6:
        return { tag: this.uint(info), value: this.decode(depth + 1) };
      default:
        return this.simple(info);
    }
  }

  private simple(info: number): CborValue {
    switch (info) {
      case 20:
        return false;
      case 21:
        return true;
      case 22:
        return null;
      case 23:
        return undefined;
      case 25: {
        this.need(2);
        const half = new DataView(this.bytes.buffer, this.bytes.byteOffset + this.offset).getUint16(0);
        this.offset += 2;
        return decodeHalf(half);
      }
      case 26: {
        this.need(4);
        const v = new DataView(this.bytes.buffer, this.bytes.byteOffset + this.offset).getFloat32(0);
        this.offset += 4;
        return v;
      }
      case 27: {
        this.need(8);
        const v = new DataView(this.bytes.buffer, this.bytes.byteOffset + this.offset).getFloat64(0);
        this.offset += 8;
        return v;
      }
      default:
        if (info < 24) return undefined;
        if (info === 24) {
          this.u8();
          return undefined;
        }
        throw new CborError(`unsupported CBOR simple value ${info}`);
    }
  }
}

function decodeHalf(half: number): number {
  const exp = (half >> 10) & 0x1f;
  const mant = half & 0x3ff;
  const sign = half & 0x8000 ? -1 : 1;
  if (exp === 0) return sign * 2 ** -14 * (mant / 1024);
  if (exp === 31) return mant ? Number.NaN : sign * Number.POSITIVE_INFINITY;
  return sign * 2 ** (exp - 15) * (1 + mant / 1024);
}

/** Decodes the first CBOR item of `bytes` (trailing bytes, such as JUMBF padding, are ignored). */
export function decodeCbor(bytes: Uint8Array): CborValue {
  return new Decoder(bytes).decode();
}

export function isTagged(value: CborValue): value is CborTagged {
  return (
    typeof value === 'object' &&
    value !== null &&
    !(value instanceof Uint8Array) &&
    !Array.isArray(value) &&
    !(value instanceof Map)
  );
}
