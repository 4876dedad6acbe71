import { createHash } from 'node:crypto';

/**
 * The bits the mark carries: the 64-bit payload, then a 32-bit check over it. The check is a truncated
 * SHA-256 under a fixed domain tag (a keyed check rather than a CRC): a decode from an unmarked image passes
 * with probability 2^-32, and its structure is unrelated to the convolutional code's, so error patterns the
 * decoder favours do not pass it more often than chance.
 */
export const PAYLOAD_BYTES = 8;
const CHECK_BYTES = 4;
const CHECK_TAG = 'cairn-dct-v1/check:';

export const FRAME_BITS = (PAYLOAD_BYTES + CHECK_BYTES) * 8;

function check(payload: Uint8Array): Uint8Array {
  return createHash('sha256').update(CHECK_TAG).update(payload).digest().subarray(0, CHECK_BYTES);
}

function toBits(bytes: Uint8Array): Uint8Array {
  const bits = new Uint8Array(bytes.length * 8);
  for (let i = 0; i < bits.length; i++) bits[i] = (bytes[i >> 3]! >> (7 - (i & 7))) & 1;
  return bits;
}

function toBytes(bits: Uint8Array): Uint8Array {
  const bytes = new Uint8Array(bits.length >> 3);
  for (let i = 0; i < bits.length; i++) bytes[i >> 3]! |= bits[i]! << (7 - (i & 7));
  return bytes;
}

export function frameBits(payload: Uint8Array): Uint8Array {
  if (payload.length !== PAYLOAD_BYTES)
    throw new Error(`payload must be ${PAYLOAD_BYTES} bytes, got ${payload.length}`);
  const bytes = new Uint8Array(PAYLOAD_BYTES + CHECK_BYTES);
  bytes.set(payload);
  bytes.set(check(payload), PAYLOAD_BYTES);
  return toBits(bytes);
}

/** The payload of a decoded frame, or null when its check does not match. */
export function unframe(bits: Uint8Array): Uint8Array | null {
  const bytes = toBytes(bits);
  const payload = bytes.slice(0, PAYLOAD_BYTES);
  const expected = check(payload);
  for (let i = 0; i < CHECK_BYTES; i++) if (bytes[PAYLOAD_BYTES + i] !== expected[i]) return null;
  return payload;
}
