import { FINGERPRINT_ALG } from '@cairn/catalog';

/**
 * A PDQ-class perceptual hash (Facebook's PDQ as published: luminance, Jarosz box-filter decimation to 64×64,
 * 2D DCT keeping the 16×16 low-frequency block, median threshold → 256 bits, plus a gradient-based quality).
 * Written from the algorithm description; it is PDQ-like, not bit-compatible with the reference library, so it
 * carries its own algorithm name. Per-pixel loops use no Math.* calls (they crawl inside jest's VM sandbox).
 */
export const PDQ_ALG = FINGERPRINT_ALG.image;
export const HASH_BITS = 256;
export const HASH_BYTES = HASH_BITS / 8;

export interface PerceptualHash {
  /** 32 bytes, most significant bit first. */
  readonly bits: Uint8Array;
  /** 0..100: how much structure the image has (flat or near-flat images hash unreliably). */
  readonly quality: number;
  readonly alg: string;
}

/** The soft-binding fingerprint of an image: one module behind this interface. */
/** Decoded 8-bit pixels' shape: interleaved channels, rows top to bottom. */
export interface RawPixelLayout {
  readonly width: number;
  readonly height: number;
  readonly channels: 1 | 2 | 3 | 4;
}

/** A rectangle of a picture, in its pixels. */
export interface PixelRegion {
  readonly left: number;
  readonly top: number;
  readonly width: number;
  readonly height: number;
}

export interface ImageFingerprinter {
  readonly alg: string;
  hashImage(bytes: Buffer): Promise<PerceptualHash>;
  /** The same hash of decoded 8-bit pixels, or of a region of them (as a lossless file of it would hash). */
  hashPixels(pixels: Buffer, raw: RawPixelLayout, region?: PixelRegion): Promise<PerceptualHash>;
}

const GRID = 64;
const KEEP = 16;
/**
 * Every image is first brought to this square working size (by the decoder, adapters/image-hash.ts), so the hash
 * does not depend on resolution; video frames are scaled to it by ffmpeg.
 */
export const WORK_SIDE = 128;

/** DCT-II rows 1..16 (the DC row is skipped: it only carries the mean), scaled as an orthonormal basis. */
const DCT: Float64Array = (() => {
  const m = new Float64Array(KEEP * GRID);
  const scale = Math.sqrt(2 / GRID);
  for (let i = 0; i < KEEP; i++)
    for (let j = 0; j < GRID; j++) m[i * GRID + j] = scale * Math.cos((Math.PI / (2 * GRID)) * (i + 1) * (2 * j + 1));
  return m;
})();

/** Window of the Jarosz filter: two box passes of this width approximate a tent that spans one output cell. */
export function jaroszWindow(oldSize: number, newSize: number): number {
  return ((oldSize + 2 * newSize - 1) / (2 * newSize)) | 0;
}

/** One box-filter pass along a line of `count` samples spaced by `stride`, the window clipped at the edges. */
function boxLine(
  src: Float32Array,
  dst: Float32Array,
  start: number,
  stride: number,
  count: number,
  window: number,
): void {
  const before = ((window - 1) / 2) | 0;
  const after = window - 1 - before;
  let sum = 0;
  let lo = 0; // first index in the window
  let hi = -1; // last index in the window
  for (let i = 0; i < count; i++) {
    const wantHi = i + after < count ? i + after : count - 1;
    while (hi < wantHi) {
      hi++;
      sum += src[start + hi * stride]!;
    }
    const wantLo = i - before > 0 ? i - before : 0;
    while (lo < wantLo) {
      sum -= src[start + lo * stride]!;
      lo++;
    }
    dst[start + i * stride] = sum / (hi - lo + 1);
  }
}

/** Luminance (0..255) of interleaved 8-bit RGB(A) or grey pixels. */
export function luminance(pixels: Uint8Array, width: number, height: number, channels: number): Float32Array {
  const n = width * height;
  const y = new Float32Array(n);
  if (channels < 3) {
    for (let i = 0; i < n; i++) y[i] = pixels[i * channels]!;
    return y;
  }
  for (let i = 0, p = 0; i < n; i++, p += channels)
    y[i] = 0.299 * pixels[p]! + 0.587 * pixels[p + 1]! + 0.114 * pixels[p + 2]!;
  return y;
}

/** Jarosz decimation: two box passes per axis, then the centre sample of each of the 64×64 cells. */
export function decimate(luma: Float32Array, width: number, height: number): Float32Array {
  const a = Float32Array.from(luma);
  const b = new Float32Array(a.length);
  const wx = jaroszWindow(width, GRID);
  const wy = jaroszWindow(height, GRID);
  for (let pass = 0; pass < 2; pass++) {
    for (let r = 0; r < height; r++) boxLine(a, b, r * width, 1, width, wx);
    for (let c = 0; c < width; c++) boxLine(b, a, c, width, height, wy);
  }
  const out = new Float32Array(GRID * GRID);
  for (let i = 0; i < GRID; i++) {
    const r = (((i + 0.5) * height) / GRID) | 0;
    for (let j = 0; j < GRID; j++) out[i * GRID + j] = a[r * width + ((((j + 0.5) * width) / GRID) | 0)]!;
  }
  return out;
}

/** Quality 0..100 from the sum of neighbour differences of the 64×64 grid (PDQ's gradient measure). */
export function gradientQuality(grid: Float32Array): number {
  let sum = 0;
  for (let i = 0; i < GRID - 1; i++) {
    for (let j = 0; j < GRID; j++) {
      const u = grid[i * GRID + j]!;
      const down = grid[(i + 1) * GRID + j]! - u;
      sum += ((100 * (down < 0 ? -down : down)) / 255) | 0;
      const right = grid[j * GRID + i + 1]! - grid[j * GRID + i]!;
      sum += ((100 * (right < 0 ? -right : right)) / 255) | 0;
    }
  }
  const q = (sum / 90) | 0;
  return q > 100 ? 100 : q;
}

/** The 16×16 low-frequency DCT block (without the DC row/column) of the 64×64 grid. */
export function dct16(grid: Float32Array): Float64Array {
  const t = new Float64Array(KEEP * GRID); // DCT × grid
  for (let i = 0; i < KEEP; i++) {
    for (let k = 0; k < GRID; k++) {
      const d = DCT[i * GRID + k]!;
      const row = k * GRID;
      const ti = i * GRID;
      for (let j = 0; j < GRID; j++) t[ti + j] = t[ti + j]! + d * grid[row + j]!;
    }
  }
  const out = new Float64Array(KEEP * KEEP); // (DCT × grid) × DCTᵀ
  for (let i = 0; i < KEEP; i++) {
    for (let j = 0; j < KEEP; j++) {
      let s = 0;
      for (let k = 0; k < GRID; k++) s += t[i * GRID + k]! * DCT[j * GRID + k]!;
      out[i * KEEP + j] = s;
    }
  }
  return out;
}

/** Bits of `coefficients` above their median, most significant bit first. */
export function thresholdAtMedian(coefficients: Float64Array): Uint8Array {
  const sorted = Float64Array.from(coefficients).sort();
  const half = sorted.length >> 1;
  const median = (sorted[half - 1]! + sorted[half]!) / 2;
  const bits = new Uint8Array(coefficients.length / 8);
  for (let i = 0; i < coefficients.length; i++)
    if (coefficients[i]! > median) bits[i >> 3] = bits[i >> 3]! | (0x80 >> (i & 7));
  return bits;
}

/**
 * The 64×64 grid the hash is taken of: decimate(luminance(…)). At the working size (128 a side, every hashed
 * picture) the Jarosz window is one sample, so the box passes copy and the grid is the luminance of the cells'
 * centre pixels: computed for those 4 096 pixels alone, the same values (each rounded to float32 as the passes
 * store it), at a tenth of the work, for twelve hashes a signed image and seven a video frame.
 */
export function pdqGrid(pixels: Uint8Array, width: number, height: number, channels: number): Float32Array {
  if (jaroszWindow(width, GRID) !== 1 || jaroszWindow(height, GRID) !== 1)
    return decimate(luminance(pixels, width, height, channels), width, height);
  const out = new Float32Array(GRID * GRID);
  for (let i = 0; i < GRID; i++) {
    const row = (((i + 0.5) * height) / GRID) | 0;
    for (let j = 0; j < GRID; j++) {
      const p = (row * width + ((((j + 0.5) * width) / GRID) | 0)) * channels;
      out[i * GRID + j] =
        channels < 3 ? pixels[p]! : 0.299 * pixels[p]! + 0.587 * pixels[p + 1]! + 0.114 * pixels[p + 2]!;
    }
  }
  return out;
}

/** The hash of decoded pixels. */
export function hashPixels(pixels: Uint8Array, width: number, height: number, channels: number): PerceptualHash {
  const grid = pdqGrid(pixels, width, height, channels);
  return { bits: thresholdAtMedian(dct16(grid)), quality: gradientQuality(grid), alg: PDQ_ALG };
}

const POPCOUNT = (() => {
  const t = new Uint8Array(256);
  for (let i = 1; i < 256; i++) t[i] = (i & 1) + t[i >> 1]!;
  return t;
})();

/** Number of differing bits between two hashes of the same length. */
export function hamming(a: Uint8Array, b: Uint8Array): number {
  let d = 0;
  for (let i = 0; i < a.length; i++) d += POPCOUNT[a[i]! ^ b[i]!]!;
  return d;
}

export const toHex = (bits: Uint8Array): string => Buffer.from(bits).toString('hex');

export function fromHex(hex: string): Uint8Array {
  if (!/^[0-9a-fA-F]{64}$/.test(hex)) throw new Error('a 256-bit hash is 64 hex digits');
  return new Uint8Array(Buffer.from(hex, 'hex'));
}

/** 1 at distance 0, 0 at half the bits (what unrelated hashes average). */
export function similarity(distance: number): number {
  const s = 1 - distance / (HASH_BITS / 2);
  return s < 0 ? 0 : Math.round(s * 1000) / 1000;
}
