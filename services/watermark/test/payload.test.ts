import { createHash } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import { PAYLOAD_BYTES as FRAME_PAYLOAD_BYTES } from '../src/domain/image/frame.js';
import { PAYLOAD_BYTES, payloadFor, payloadHex } from '../src/domain/payload.js';

describe('payloadFor', () => {
  it('is the first 8 bytes of SHA-256("cairn-watermark-v1:" + watermark id)', () => {
    const id = 'w_01JD3M4X5Y6Z7A8B9C0D1E2F3G';
    const expected = createHash('sha256').update(`cairn-watermark-v1:${id}`).digest().subarray(0, 8);
    expect(Buffer.from(payloadFor(id))).toEqual(expected);
  });

  it('is stable: a known vector', () => {
    expect(payloadHex(payloadFor('w_01JD3M4X5Y6Z7A8B9C0D1E2F3G'))).toBe('c164161fd2db047a');
  });

  it('differs per id and fits the algorithm', () => {
    expect(payloadHex(payloadFor('w_A'))).not.toBe(payloadHex(payloadFor('w_B')));
    expect(payloadFor('w_A')).toHaveLength(PAYLOAD_BYTES);
    expect(PAYLOAD_BYTES).toBe(FRAME_PAYLOAD_BYTES);
    expect(payloadHex(payloadFor('w_A'))).toMatch(/^[0-9a-f]{16}$/);
  });
});
