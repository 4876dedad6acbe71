import type { RawImage } from './raw-image.js';
import { resampleRow, tentKernel, type Kernel1D } from './resample.js';

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
 * Luma resampled to a gridWidth × gridHeight plane, one image row at a time: memory stays at
 * O(height × gridWidth) however large the image.
 */
export function lumaGrid(image: RawImage, gridWidth: number, gridHeight: number): Float32Array {
  const kx = tentKernel(image.width, gridWidth);
  const ky = tentKernel(image.height, gridHeight);
  const row = new Float32Array(image.width);
  const tmp = new Float32Array(gridWidth * image.height);
  for (let y = 0; y < image.height; y++) {
    lumaRow(image, y, row);
    resampleRow(row, 0, kx, tmp, y * gridWidth);
  }
  const grid = new Float32Array(gridWidth * gridHeight);
  for (let gy = 0; gy < gridHeight; gy++) {
    const out = gy * gridWidth;
    for (let k = ky.start[gy]!; k < ky.start[gy + 1]!; k++) {
      const w = ky.weight[k]!;
      const from = ky.index[k]! * gridWidth;
      for (let gx = 0; gx < gridWidth; gx++) grid[out + gx]! += w * tmp[from + gx]!;
    }
  }
  return grid;
}

/**
 * Adds the grid-resolution luma change `delta`, enlarged to the image by bilinear interpolation, to every
 * colour channel of `image` in place (rounded, clamped to 0..255; alpha untouched). Row by row, so no
 * full-resolution float plane is ever allocated.
 */
export function addLumaDelta(image: RawImage, delta: Float32Array, gridWidth: number, gridHeight: number): void {
  const { pixels, width, height, channels } = image;
  const kx: Kernel1D = tentKernel(gridWidth, width);
  const ky: Kernel1D = tentKernel(gridHeight, height);
  const wide = new Float32Array(width * gridHeight);
  for (let gy = 0; gy < gridHeight; gy++) resampleRow(delta, gy * gridWidth, kx, wide, gy * width);
  const colours = channels === 1 ? 1 : 3;
  // Writing through a clamped view rounds and clamps to 0..255 without a Math call per sample.
  const clamped = new Uint8ClampedArray(pixels.buffer, pixels.byteOffset, pixels.byteLength);
  const row = new Float32Array(width);
  for (let y = 0; y < height; y++) {
    row.fill(0);
    for (let k = ky.start[y]!; k < ky.start[y + 1]!; k++) {
      const w = ky.weight[k]!;
      const from = ky.index[k]! * width;
      for (let x = 0; x < width; x++) row[x]! += w * wide[from + x]!;
    }
    let p = y * width * channels;
    for (let x = 0; x < width; x++, p += channels) {
      const d = row[x]!;
      for (let c = 0; c < colours; c++) clamped[p + c] = pixels[p + c]! + d;
    }
  }
}
