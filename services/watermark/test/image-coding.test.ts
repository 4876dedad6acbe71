import { describe, expect, it } from '@jest/globals';
import { codedLength, convEncode, listViterbiDecode, viterbiDecode } from '../src/domain/image/conv-code.js';
import { FRAME_BITS, frameBits, unframe } from '../src/domain/image/frame.js';
import { permutation, seededRandom } from '../src/domain/image/prng.js';
import { composeKernels, resamplePlane, tentKernel } from '../src/domain/image/resample.js';
import { xorshift } from './support/images.js';

const payload = Uint8Array.from([0xde, 0xad, 0xbe, 0xef, 0x01, 0x23, 0x45, 0x67]);

/** Soft values for a codeword: +1 for a 0 bit, -1 for a 1 bit. */
function clean(code: Uint8Array): Float64Array {
  return Float64Array.from(code, (bit) => (bit ? -1 : 1));
}

describe('frame', () => {
  it('carries 64 payload bits and a 32-bit check', () => {
    const bits = frameBits(payload);
    expect(bits).toHaveLength(FRAME_BITS);
    expect(FRAME_BITS).toBe(96);
    expect(unframe(bits)).toEqual(payload);
  });

  it('fails the check when any single bit is wrong', () => {
    const bits = frameBits(payload);
    for (let i = 0; i < bits.length; i++) {
      const damaged = bits.slice();
      damaged[i] = damaged[i]! ^ 1;
      expect(unframe(damaged)).toBeNull();
    }
  });
});

describe('convolutional code', () => {
  it('decodes a clean codeword', () => {
    const bits = frameBits(payload);
    const code = convEncode(bits);
    expect(code).toHaveLength(codedLength(FRAME_BITS));
    expect(viterbiDecode(clean(code), FRAME_BITS)).toEqual(bits);
  });

  it('corrects scattered errors and weak votes', () => {
    const random = xorshift(7);
    const bits = frameBits(payload);
    const soft = clean(convEncode(bits));
    // Every value weakened and noisy, and 6% of them outright wrong.
    for (let i = 0; i < soft.length; i++) soft[i] = soft[i]! * 0.3 + (random() - 0.5) * 0.4;
    for (let i = 0; i < soft.length; i += 17) soft[i] = -soft[i]!;
    expect(viterbiDecode(soft, FRAME_BITS)).toEqual(bits);
  });
});

describe('list Viterbi', () => {
  /** Frames of random payloads sent through Gaussian noise of deviation sigma (Box–Muller over xorshift). */
  function noisyFrames(count: number, sigma: number): Array<{ bits: Uint8Array; soft: Float64Array }> {
    const random = xorshift(11);
    const gauss = () => Math.sqrt(-2 * Math.log(random() + 1e-12)) * Math.cos(2 * Math.PI * random());
    return Array.from({ length: count }, () => {
      const bits = frameBits(Uint8Array.from({ length: 8 }, () => Math.floor(random() * 256)));
      const soft = Float64Array.from(convEncode(bits), (bit) => (bit ? -1 : 1) + sigma * gauss());
      return { bits, soft };
    });
  }
  const metric = (path: Uint8Array, soft: Float64Array) =>
    convEncode(path).reduce((sum, bit, i) => sum + (bit ? -soft[i]! : soft[i]!), 0);

  it('lists distinct paths, best first, the first being the Viterbi decode', () => {
    for (const { soft } of noisyFrames(8, 1)) {
      const paths = listViterbiDecode(soft, FRAME_BITS, 32);
      expect(paths).toHaveLength(32);
      expect(paths[0]).toEqual(viterbiDecode(soft, FRAME_BITS));
      expect(new Set(paths.map((p) => Buffer.from(p).toString('hex'))).size).toBe(32);
      const metrics = paths.map((p) => metric(p, soft));
      for (let i = 1; i < metrics.length; i++) expect(metrics[i]!).toBeLessThanOrEqual(metrics[i - 1]! + 1e-9);
    }
  });

  it('with the check, decodes frames the most likely path gets wrong', () => {
    // Noise at a raw bit error rate of about 16 %, where the single best path is usually wrong somewhere.
    let plain = 0;
    let listed = 0;
    for (const { bits, soft } of noisyFrames(100, 1)) {
      if (unframe(viterbiDecode(soft, FRAME_BITS))) plain++;
      const first = listViterbiDecode(soft, FRAME_BITS, 32).find((path) => unframe(path) !== null);
      if (first) {
        // What passes the check is the frame sent: at 32 checks a frame, noise passing it is a 2⁻²⁷ event.
        expect(first).toEqual(bits);
        listed++;
      }
    }
    expect(listed).toBeGreaterThan(plain * 1.5);
  });
});

describe('layout generator', () => {
  it('is deterministic and permutes', () => {
    const a = permutation(1000, seededRandom(42));
    expect(permutation(1000, seededRandom(42))).toEqual(a);
    expect([...a].sort((x, y) => x - y)).toEqual([...Array(1000).keys()]);
    expect(permutation(1000, seededRandom(43))).not.toEqual(a);
  });
});

describe('resampling', () => {
  it('keeps a constant plane constant at any scale', () => {
    for (const [from, to] of [
      [256, 256],
      [451, 256],
      [256, 1000],
      [4096, 256],
    ] as const) {
      const kernel = tentKernel(from, to);
      const out = resamplePlane(new Float32Array(from * 3).fill(7), kernel, tentKernel(3, 3));
      for (const v of out) expect(v).toBeCloseTo(7, 4);
    }
  });

  it('round-trips grid → image → grid close to identity (what the embedder compensates)', () => {
    const roundTrip = composeKernels(tentKernel(256, 600), tentKernel(600, 256));
    // A slow ramp passes almost unchanged away from the edges.
    const ramp = Float32Array.from({ length: 256 }, (_, i) => Math.sin(i / 6));
    const out = resamplePlane(ramp, roundTrip, tentKernel(1, 1));
    for (let i = 8; i < 248; i++) expect(Math.abs(out[i]! - ramp[i]!)).toBeLessThan(0.05);
  });
});
