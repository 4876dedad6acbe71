import { describe, expect, it } from '@jest/globals';
import { fft, fft2d, nextPowerOfTwo } from '../src/fft.js';

/** The textbook O(n²) DFT, in double: what the fast transform must agree with. */
function dft(re: ArrayLike<number>, im: ArrayLike<number>): { re: number[]; im: number[] } {
  const n = re.length;
  const out = { re: new Array<number>(n).fill(0), im: new Array<number>(n).fill(0) };
  for (let k = 0; k < n; k++)
    for (let t = 0; t < n; t++) {
      const angle = (-2 * Math.PI * k * t) / n;
      out.re[k]! += re[t]! * Math.cos(angle) - im[t]! * Math.sin(angle);
      out.im[k]! += re[t]! * Math.sin(angle) + im[t]! * Math.cos(angle);
    }
  return out;
}

function signal(n: number, seed: number): { re: Float64Array; im: Float64Array } {
  let s = seed;
  const next = () => ((s = (s * 1103515245 + 12345) % 2147483648) / 2147483648) * 2 - 1;
  return { re: Float64Array.from({ length: n }, next), im: Float64Array.from({ length: n }, next) };
}

function maxDifference(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i]! - b[i]!));
  return worst;
}

describe('fft', () => {
  it.each([1, 2, 8, 64, 512])('agrees with the DFT at %i points, and its inverse gives the input back', (n) => {
    const { re, im } = signal(n, n);
    const expected = dft(re, im);
    const [fr, fi] = [re.slice(), im.slice()];
    fft(fr, fi);
    expect(maxDifference(fr, expected.re)).toBeLessThan(1e-9 * n);
    expect(maxDifference(fi, expected.im)).toBeLessThan(1e-9 * n);
    fft(fr, fi, true);
    expect(maxDifference(fr, re)).toBeLessThan(1e-12);
    expect(maxDifference(fi, im)).toBeLessThan(1e-12);
  });

  it('transforms Float32Arrays in float32: close to the double transform, not equal to it', () => {
    const { re, im } = signal(512, 7);
    const [r32, i32] = [Float32Array.from(re), Float32Array.from(im)];
    const [r64, i64] = [Float64Array.from(r32), Float64Array.from(i32)];
    fft(r32, i32);
    fft(r64, i64);
    const difference = maxDifference(r32, r64);
    expect(difference).toBeGreaterThan(0);
    expect(difference).toBeLessThan(1e-3);
  });

  it('refuses a length that is not a power of two, and parts of different lengths', () => {
    expect(() => fft(new Float64Array(12), new Float64Array(12))).toThrow(/power of two/);
    expect(() => fft(new Float64Array(8), new Float64Array(4))).toThrow(/differ in length/);
  });
});

describe('fft2d', () => {
  it('is the transform of every row, then of every column, and its inverse gives the plane back', () => {
    const [width, height] = [16, 8];
    const { re, im } = signal(width * height, 3);
    const [pr, pi] = [re.slice(), im.slice()];
    fft2d(pr, pi, width, height);
    // The same by hand: each row, then each column copied out.
    const [hr, hi] = [re.slice(), im.slice()];
    for (let y = 0; y < height; y++)
      fft(hr.subarray(y * width, (y + 1) * width), hi.subarray(y * width, (y + 1) * width));
    for (let x = 0; x < width; x++) {
      const cr = Float64Array.from({ length: height }, (_, y) => hr[y * width + x]!);
      const ci = Float64Array.from({ length: height }, (_, y) => hi[y * width + x]!);
      fft(cr, ci);
      for (let y = 0; y < height; y++) [hr[y * width + x], hi[y * width + x]] = [cr[y]!, ci[y]!];
    }
    expect(maxDifference(pr, hr)).toBeLessThan(1e-12);
    expect(maxDifference(pi, hi)).toBeLessThan(1e-12);
    fft2d(pr, pi, width, height, true);
    expect(maxDifference(pr, re)).toBeLessThan(1e-12);
    expect(maxDifference(pi, im)).toBeLessThan(1e-12);
  });

  it('refuses a plane whose sides are not powers of two or whose size does not match', () => {
    expect(() => fft2d(new Float64Array(12 * 8), new Float64Array(12 * 8), 12, 8)).toThrow(/power of two/);
    expect(() => fft2d(new Float64Array(10), new Float64Array(10), 4, 4)).toThrow(/size mismatch/);
  });
});

describe('nextPowerOfTwo', () => {
  it.each([
    [1, 1],
    [5, 8],
    [256, 256],
    [257, 512],
  ])('of %i is %i', (n, expected) => {
    expect(nextPowerOfTwo(n)).toBe(expected);
  });
});
