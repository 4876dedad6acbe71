import type { RawImage } from './raw-image.js';
import { denseKernel, resampleRowDense, scatterKernel, tentKernel, type Kernel1D } from './resample.js';

/**
 * The luma plane (ITU-R BT.601 weights, the ones JPEG uses) is where the mark lives: JPEG keeps luma at full
 * resolution while it subsamples chroma, and adding the same amount to R, G and B changes Y by that amount
 * and leaves Cb and Cr exactly as they were (their weights sum to zero).
 */
const KR = 0.299;
const KG = 0.587;
const KB = 0.114;

/** Luma of one image row into `out` (length width). */
export function lumaRow(image: RawImage, y: number, out: Float32Array): void {
  const { pixels, width, channels } = image;
  let p = y * width * channels;
  if (channels === 1) {
    for (let x = 0; x < width; x++) out[x] = pixels[p++]!;
    return;
  }
  for (let x = 0; x < width; x++, p += channels) out[x] = KR * pixels[p]! + KG * pixels[p + 1]! + KB * pixels[p + 2]!;
}

/**
 * Luma resampled to a gridWidth × gridHeight plane, one image row at a time: each row's luma is reduced
 * horizontally and added at once into the grid rows that use it, so memory stays at one row plus the grid
 * however large the image. The sums run in the same order as a gather over the rows would (the grid rows are
 * float32 accumulators either way).
 */
export function lumaGrid(image: RawImage, gridWidth: number, gridHeight: number): Float32Array {
  const { width, height } = image;
  const kx = denseKernel(tentKernel(width, gridWidth));
  const { start, output, weight } = scatterKernel(tentKernel(height, gridHeight));
  const row = new Float32Array(width);
  const reduced = new Float32Array(gridWidth);
  const grid = new Float32Array(gridWidth * gridHeight);
  for (let y = 0; y < height; y++) {
    const end = start[y + 1]!;
    if (start[y]! === end) continue;
    lumaRow(image, y, row);
    resampleRowDense(row, 0, kx, reduced, 0);
    for (let k = start[y]!; k < end; k++) accumulate(grid, output[k]! * gridWidth, weight[k]!, reduced, gridWidth);
  }
  return grid;
}

/** into[offset + i] += w · from[i] for i < n. */
function accumulate(into: Float32Array, offset: number, w: number, from: Float32Array, n: number): void {
  for (let i = 0; i < n; i++) into[offset + i]! += w * from[i]!;
}

/**
 * Adds the grid-resolution luma change `delta`, enlarged to the image by bilinear interpolation, to every
 * colour channel of `image` in place (rounded, clamped to 0..255; alpha untouched). Row by row, so no
 * full-resolution float plane is ever allocated.
 */
export function addLumaDelta(image: RawImage, delta: Float32Array, gridWidth: number, gridHeight: number): void {
  const { pixels, width, height, channels } = image;
  const kx = denseKernel(tentKernel(gridWidth, width));
  const ky: Kernel1D = tentKernel(gridHeight, height);
  const wide = new Float32Array(width * gridHeight);
  for (let gy = 0; gy < gridHeight; gy++) resampleRowDense(delta, gy * gridWidth, kx, wide, gy * width);
  // Writing through a clamped view rounds and clamps to 0..255 without a Math call per sample.
  const clamped = new Uint8ClampedArray(pixels.buffer, pixels.byteOffset, pixels.byteLength);
  const row = new Float32Array(width);
  for (let y = 0; y < height; y++) {
    const first = ky.start[y]!;
    const taps = ky.start[y + 1]! - first;
    const offset = y * width * channels;
    if (taps === 2 && channels !== 1) {
      // Bilinear between two enlarged rows (the case of every row but the edges), added as it is interpolated.
      addInterpolatedRow(
        pixels,
        clamped,
        offset,
        wide,
        ky.index[first]! * width,
        ky.weight[first]!,
        ky.index[first + 1]! * width,
        ky.weight[first + 1]!,
        width,
        channels,
      );
      continue;
    }
    row.fill(0);
    for (let k = first; k < first + taps; k++) {
      const w = ky.weight[k]!;
      const from = ky.index[k]! * width;
      for (let x = 0; x < width; x++) row[x]! += w * wide[from + x]!;
    }
    addRow(pixels, clamped, offset, row, width, channels);
  }
}

/** One row of the change added to the colour samples. */
function addRow(
  pixels: Uint8Array,
  clamped: Uint8ClampedArray,
  offset: number,
  row: Float32Array,
  width: number,
  channels: number,
): void {
  const colours = channels === 1 ? 1 : 3;
  for (let x = 0, p = offset; x < width; x++, p += channels) {
    const d = row[x]!;
    for (let c = 0; c < colours; c++) clamped[p + c] = pixels[p + c]! + d;
  }
}

/**
 * addRow of w0 · wide[a + x] + w1 · wide[b + x], rounded to float32 after each term as the accumulating row
 * would be (so the pixels are the same as through it).
 */
function addInterpolatedRow(
  pixels: Uint8Array,
  clamped: Uint8ClampedArray,
  offset: number,
  wide: Float32Array,
  a: number,
  w0: number,
  b: number,
  w1: number,
  width: number,
  channels: number,
): void {
  for (let x = 0, p = offset; x < width; x++, p += channels) {
    const d = Math.fround(Math.fround(w0 * wide[a + x]!) + w1 * wide[b + x]!);
    clamped[p] = pixels[p]! + d;
    clamped[p + 1] = pixels[p + 1]! + d;
    clamped[p + 2] = pixels[p + 2]! + d;
  }
}
