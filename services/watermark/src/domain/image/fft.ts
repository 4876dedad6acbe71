/**
 * In-place iterative radix-2 complex FFT on split real/imaginary arrays, and its 2-D form. Small and
 * dependency-free because the synchronisation of cairn-sync-v2 needs only power-of-two sizes up to a few
 * hundred samples per side. The bit-reversal permutation and the twiddle factors of each size are computed once
 * and kept (detection runs the same few sizes thousands of times).
 */
interface FftTables {
  /** Pairs (i, j), i < j, to swap for the bit-reversal permutation, flattened. */
  readonly swaps: Int32Array;
  /** cos and sin of -2πk/n for k < n/2. */
  readonly cos: Float64Array;
  readonly sin: Float64Array;
}

const tables = new Map<number, FftTables>();

function tablesFor(n: number): FftTables {
  let t = tables.get(n);
  if (!t) {
    const swaps: number[] = [];
    for (let i = 1, j = 0; i < n; i++) {
      let bit = n >> 1;
      for (; j & bit; bit >>= 1) j ^= bit;
      j ^= bit;
      if (i < j) swaps.push(i, j);
    }
    const half = Math.max(1, n >> 1);
    const cos = new Float64Array(half);
    const sin = new Float64Array(half);
    for (let k = 0; k < half; k++) {
      cos[k] = Math.cos((-2 * Math.PI * k) / n);
      sin[k] = Math.sin((-2 * Math.PI * k) / n);
    }
    t = { swaps: Int32Array.from(swaps), cos, sin };
    tables.set(n, t);
  }
  return t;
}

function assertPowerOfTwo(n: number): void {
  if (n < 1 || (n & (n - 1)) !== 0) throw new Error(`fft length must be a power of two, got ${n}`);
}

export function fft(re: Float64Array, im: Float64Array, inverse = false): void {
  const n = re.length;
  if (n !== im.length) throw new Error('fft: real and imaginary parts differ in length');
  assertPowerOfTwo(n);
  fftAt(re, im, 0, n, inverse);
  if (inverse) scale(re, im, 1 / n);
}

/** The transform of re/im[offset .. offset + n) in place, unscaled. */
function fftAt(re: Float64Array, im: Float64Array, offset: number, n: number, inverse: boolean): void {
  const { swaps, cos, sin } = tablesFor(n);
  for (let s = 0; s < swaps.length; s += 2) {
    const i = offset + swaps[s]!;
    const j = offset + swaps[s + 1]!;
    const tr = re[i]!;
    re[i] = re[j]!;
    re[j] = tr;
    const ti = im[i]!;
    im[i] = im[j]!;
    im[j] = ti;
  }
  const sign = inverse ? -1 : 1;
  for (let len = 2; len <= n; len <<= 1) {
    const half = len >> 1;
    const stride = n / len;
    for (let i = offset; i < offset + n; i += len) {
      for (let k = 0; k < half; k++) {
        const cr = cos[k * stride]!;
        const ci = sign * sin[k * stride]!;
        const a = i + k;
        const b = a + half;
        const xr = re[b]! * cr - im[b]! * ci;
        const xi = re[b]! * ci + im[b]! * cr;
        re[b] = re[a]! - xr;
        im[b] = im[a]! - xi;
        re[a]! += xr;
        im[a]! += xi;
      }
    }
  }
}

/**
 * The transform along the columns of a row-major plane, all columns at once: each butterfly combines two whole
 * rows with one twiddle, so the inner loop runs along memory (no column copies).
 */
function fftColumns(re: Float64Array, im: Float64Array, width: number, height: number, inverse: boolean): void {
  const { swaps, cos, sin } = tablesFor(height);
  for (let s = 0; s < swaps.length; s += 2) {
    const i = swaps[s]! * width;
    const j = swaps[s + 1]! * width;
    for (let x = 0; x < width; x++) {
      const tr = re[i + x]!;
      re[i + x] = re[j + x]!;
      re[j + x] = tr;
      const ti = im[i + x]!;
      im[i + x] = im[j + x]!;
      im[j + x] = ti;
    }
  }
  const sign = inverse ? -1 : 1;
  for (let len = 2; len <= height; len <<= 1) {
    const half = len >> 1;
    const stride = height / len;
    for (let i = 0; i < height; i += len) {
      for (let k = 0; k < half; k++) {
        const cr = cos[k * stride]!;
        const ci = sign * sin[k * stride]!;
        const a = (i + k) * width;
        const b = a + half * width;
        for (let x = 0; x < width; x++) {
          const br = re[b + x]!;
          const bi = im[b + x]!;
          const xr = br * cr - bi * ci;
          const xi = br * ci + bi * cr;
          re[b + x] = re[a + x]! - xr;
          im[b + x] = im[a + x]! - xi;
          re[a + x]! += xr;
          im[a + x]! += xi;
        }
      }
    }
  }
}

function scale(re: Float64Array, im: Float64Array, by: number): void {
  for (let i = 0; i < re.length; i++) {
    re[i]! *= by;
    im[i]! *= by;
  }
}

/** 2-D FFT of a row-major width × height plane (both powers of two), in place. */
export function fft2d(re: Float64Array, im: Float64Array, width: number, height: number, inverse = false): void {
  assertPowerOfTwo(width);
  assertPowerOfTwo(height);
  if (re.length !== width * height || im.length !== width * height) throw new Error('fft2d: plane size mismatch');
  for (let y = 0; y < height; y++) fftAt(re, im, y * width, width, inverse);
  fftColumns(re, im, width, height, inverse);
  if (inverse) scale(re, im, 1 / (width * height));
}

export function nextPowerOfTwo(n: number): number {
  let p = 1;
  while (p < n) p <<= 1;
  return p;
}
