/**
 * In-place iterative radix-2 complex FFT on split real/imaginary arrays, and its 2-D form: the one transform the
 * audio and image watermarks and the audio fingerprint run. Small and dependency-free because they need only
 * power-of-two sizes up to a few hundred samples (per side); the bit-reversal permutation and the twiddle factors
 * of each size are computed once and kept, since the same few sizes run thousands of times per second of media.
 *
 * The precision follows the arrays: on Float32Arrays the twiddles are float32 too and every stage is rounded to
 * float32 when stored, on Float64Arrays everything stays in double. A fingerprint computed in float32 is matched
 * against ones stored long ago, so its transform must stay the same bit for bit.
 */
export type FftArray = Float32Array | Float64Array;

interface FftTables {
  /** The bit-reversal permutation: index i holds the bit-reversed i. */
  readonly reversed: Uint32Array;
  /** The same as pairs (i, j), i < j, to swap, flattened (the column transform moves whole rows by them). */
  readonly swaps: Int32Array;
  /** cos and sin of -2πk/n for k < n/2, in the precision of the arrays transformed. */
  readonly cos: FftArray;
  readonly sin: FftArray;
}

const float64Tables = new Map<number, FftTables>();
const float32Tables = new Map<number, FftTables>();

function tablesFor(n: number, float32: boolean): FftTables {
  const cache = float32 ? float32Tables : float64Tables;
  let t = cache.get(n);
  if (!t) {
    assertPowerOfTwo(n);
    const reversed = new Uint32Array(n);
    const swaps: number[] = [];
    for (let i = 1, j = 0; i < n; i++) {
      let bit = n >> 1;
      for (; j & bit; bit >>= 1) j ^= bit;
      j ^= bit;
      reversed[i] = j;
      if (i < j) swaps.push(i, j);
    }
    const half = Math.max(1, n >> 1);
    const cos = float32 ? new Float32Array(half) : new Float64Array(half);
    const sin = float32 ? new Float32Array(half) : new Float64Array(half);
    for (let k = 0; k < half; k++) {
      cos[k] = Math.cos((-2 * Math.PI * k) / n);
      sin[k] = Math.sin((-2 * Math.PI * k) / n);
    }
    t = { reversed, swaps: Int32Array.from(swaps), cos, sin };
    cache.set(n, t);
  }
  return t;
}

function assertPowerOfTwo(n: number): void {
  if (n < 1 || (n & (n - 1)) !== 0) throw new Error(`fft length must be a power of two, got ${n}`);
}

/**
 * The transform of re/im (one length, a power of two) in place: forward (e^{-iωt}), or the inverse scaled by 1/n.
 * A process should run it on one array type: V8 compiles the loops for the type it has seen, and a process
 * transforming both Float32Arrays and Float64Arrays ran the audio mark's and the fingerprint's transforms up to a
 * quarter slower (each service runs one: the fingerprint float32, the watermarks float64).
 */
export function fft(re: FftArray, im: FftArray, inverse = false): void {
  const n = re.length;
  if (im.length !== n) throw new Error('fft: real and imaginary parts differ in length');
  const { reversed, cos, sin } = tablesFor(n, re instanceof Float32Array);
  for (let i = 0; i < n; i++) {
    const j = reversed[i]!;
    if (j > i) {
      const tr = re[i]!;
      re[i] = re[j]!;
      re[j] = tr;
      const ti = im[i]!;
      im[i] = im[j]!;
      im[j] = ti;
    }
  }
  const sign = inverse ? -1 : 1;
  for (let half = 1; half < n; half <<= 1) {
    const stride = n / (2 * half);
    for (let start = 0; start < n; start += 2 * half) {
      for (let k = 0; k < half; k++) {
        const cr = cos[k * stride]!;
        const ci = sign * sin[k * stride]!;
        const a = start + k;
        const b = a + half;
        const xr = re[b]! * cr - im[b]! * ci;
        const xi = re[b]! * ci + im[b]! * cr;
        re[b] = re[a]! - xr;
        im[b] = im[a]! - xi;
        re[a] = re[a]! + xr;
        im[a] = im[a]! + xi;
      }
    }
  }
  if (inverse) scale(re, im, 1 / n);
}

/**
 * The transform along the columns of a row-major plane, all columns at once: each butterfly combines two whole
 * rows with one twiddle, so the inner loop runs along memory (no column copies).
 */
function fftColumns(re: Float64Array, im: Float64Array, width: number, height: number, inverse: boolean): void {
  const { swaps, cos, sin } = tablesFor(height, false);
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

function scale(re: FftArray, im: FftArray, by: number): void {
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
  // Each row's inverse is scaled by 1/width as it is transformed, the columns' by 1/height after: scaling by a
  // power of two is exact (short of subnormals), so this is the plane's 1/(width × height) to the bit.
  for (let y = 0; y < height; y++)
    fft(re.subarray(y * width, (y + 1) * width), im.subarray(y * width, (y + 1) * width), inverse);
  fftColumns(re, im, width, height, inverse);
  if (inverse) scale(re, im, 1 / height);
}

export function nextPowerOfTwo(n: number): number {
  let p = 1;
  while (p < n) p <<= 1;
  return p;
}
