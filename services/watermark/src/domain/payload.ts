import { createHash } from 'node:crypto';
import { deriveSecret } from './image/cairn-dct-keyed-v1.js';

/** Bytes of the payload an image mark carries (64 bits). */
export const PAYLOAD_BYTES = 8;

const PAYLOAD_TAG = 'cairn-watermark-v1:';

/**
 * The cairn-dct-v1 (keyless) payload for a watermark id: the first 8 bytes of SHA-256("cairn-watermark-v1:" + id). Derived rather
 * than random so that re-embedding the same id always writes the same mark, and the registry can be checked
 * against the id alone.
 */
export function payloadFor(watermarkId: string): Uint8Array {
  return new Uint8Array(
    createHash('sha256')
      .update(PAYLOAD_TAG + watermarkId, 'utf8')
      .digest()
      .subarray(0, PAYLOAD_BYTES),
  );
}

/**
 * The cairn-dct-keyed-v1 payload for a watermark id: the first 8 bytes of HMAC-SHA256 under the mark's key.
 * Deterministic for the same reasons as payloadFor, but nobody without the key can tell which payload an id
 * will get, so an id seen in public does not say what to stamp.
 */
export function keyedPayloadFor(key: Uint8Array, watermarkId: string): Uint8Array {
  return new Uint8Array(deriveSecret(key, 'payload', watermarkId).subarray(0, PAYLOAD_BYTES));
}

export function payloadHex(payload: Uint8Array): string {
  return Buffer.from(payload.buffer, payload.byteOffset, payload.byteLength).toString('hex');
}
