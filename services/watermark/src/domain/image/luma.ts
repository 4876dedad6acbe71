import type { RawImage } from './raw-image.js';
import {
  denseKernel,
  resampleRowDense,
  scatterKernel,
  tentKernel,
  type DenseKernel1D,
  type Kernel1D,
  type ScatterKernel1D,
} from './resample.js';

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
  return new LumaResampler(image.width, image.height, gridWidth, gridHeight).grid(image);
}

/**
 * Adds the grid-resolution luma change `delta`, enlarged to the image by bilinear interpolation, to every
 * colour channel of `image` in place (rounded, clamped to 0..255; alpha untouched). Row by row, so no
 * full-resolution float plane is ever allocated. Answers LumaResampler.addDelta's sum of squared changes.
 */
export function addLumaDelta(image: RawImage, delta: Float32Array, gridWidth: number, gridHeight: number): number {
  return new LumaResampler(image.width, image.height, gridWidth, gridHeight).addDelta(image, delta);
}

/**
 * The kernels between one image size and one grid size (lumaGrid's reduction, addLumaDelta's bilinear
 * enlargement) and their working rows, made once: a video's frames all share a size, so its marker keeps one
 * of these instead of building the kernels and buffers again for every frame. Results are lumaGrid's and
 * addLumaDelta's exactly.
 */
export class LumaResampler {
  private readonly reduceX: DenseKernel1D;
  private readonly reduceY: ScatterKernel1D;
  private readonly enlargeX: DenseKernel1D;
  /** addDelta's bilinear enlargement from the grid to the image, horizontal and vertical (tentKernel's). */
  readonly enlargement: { readonly x: Kernel1D; readonly y: Kernel1D };
  private readonly row: Float32Array;
  private readonly reduced: Float32Array;
  /** The grid's rows enlarged to the image's width: made by the first addDelta (a grid alone never needs it). */
  private wideRows: Float32Array | null = null;

  constructor(
    readonly width: number,
    readonly height: number,
    readonly gridWidth: number,
    readonly gridHeight: number,
  ) {
    this.reduceX = denseKernel(tentKernel(width, gridWidth));
    this.reduceY = scatterKernel(tentKernel(height, gridHeight));
    this.enlargement = { x: tentKernel(gridWidth, width), y: tentKernel(gridHeight, height) };
    this.enlargeX = denseKernel(this.enlargement.x);
    this.row = new Float32Array(width);
    this.reduced = new Float32Array(gridWidth);
  }

  private get wide(): Float32Array {
    return (this.wideRows ??= new Float32Array(this.width * this.gridHeight));
  }

  /** lumaGrid of `image` (which must be width × height). */
  grid(image: RawImage): Float32Array {
    this.check(image);
    const { height, gridWidth, row, reduced } = this;
    const { start, output, weight } = this.reduceY;
    const grid = new Float32Array(gridWidth * this.gridHeight);
    for (let y = 0; y < height; y++) {
      const end = start[y + 1]!;
      if (start[y]! === end) continue;
      lumaRow(image, y, row);
      resampleRowDense(row, 0, this.reduceX, reduced, 0);
      for (let k = start[y]!; k < end; k++) accumulate(grid, output[k]! * gridWidth, weight[k]!, reduced, gridWidth);
    }
    return grid;
  }

  /**
   * addLumaDelta of `delta` (gridWidth × gridHeight) to `image`, answering the sum of the squared changes of its
   * colour samples as they were written (after rounding and clamping): the mark's PSNR without a second pass over
   * the pixels or a copy of the original to compare with.
   */
  addDelta(image: RawImage, delta: Float32Array): number {
    this.check(image);
    const { pixels, width, channels } = image;
    // A gray image is one plane: the same samples, the same sums.
    if (channels === 1) return this.addPlaneDelta(pixels, delta);
    const { wide } = this;
    this.enlargeRows(delta);
    // Writing through a clamped view rounds and clamps to 0..255 without a Math call per sample (the edge rows).
    const clamped = new Uint8ClampedArray(pixels.buffer, pixels.byteOffset, pixels.byteLength);
    return this.addRows(
      width * channels,
      (offset, a, w0, b, w1) => addInterpolatedRow(pixels, offset, wide, a, w0, b, w1, width, channels),
      (offset, row) => addRow(pixels, clamped, offset, row, width, channels),
    );
  }

  /**
   * addDelta to an 8-bit plane (one channel, width × height bytes from `plane`'s start), answering the sum of
   * the squared changes as they were written (after rounding and clamping), for a PSNR without a copy of the plane.
   */
  addPlaneDelta(plane: Uint8Array, delta: Float32Array): number {
    const { width, height, wide } = this;
    if (plane.length < width * height) throw new Error(`a ${width}×${height} plane needs ${width * height} bytes`);
    this.enlargeRows(delta);
    const clamped = new Uint8ClampedArray(plane.buffer, plane.byteOffset, width * height);
    return this.addRows(
      width,
      (offset, a, w0, b, w1) => addInterpolatedPlaneRow(plane, clamped, offset, wide, a, w0, b, w1, width),
      (offset, row) => addRow(plane, clamped, offset, row, width, 1),
    );
  }

  /**
   * The enlarged rows (enlargeRows) added row by row, `rowLength` samples apart, answering the sum of the squared
   * changes: a row between two enlarged rows (every row but the edges) through `interpolated` (enlarged row
   * offsets and weights), as it is interpolated; an edge row through `edge` once interpolatedRow has built it.
   */
  private addRows(
    rowLength: number,
    interpolated: (offset: number, a: number, w0: number, b: number, w1: number) => number,
    edge: (offset: number, row: Float32Array) => number,
  ): number {
    const {
      width,
      height,
      row,
      enlargement: { y: ky },
    } = this;
    let squaredError = 0;
    for (let y = 0; y < height; y++) {
      const first = ky.start[y]!;
      const offset = y * rowLength;
      if (ky.start[y + 1]! - first === 2) {
        squaredError += interpolated(
          offset,
          ky.index[first]! * width,
          ky.weight[first]!,
          ky.index[first + 1]! * width,
          ky.weight[first + 1]!,
        );
        continue;
      }
      this.interpolatedRow(y, row);
      squaredError += edge(offset, row);
    }
    return squaredError;
  }

  /** The grid's rows enlarged horizontally into `wide` (gridHeight rows of width). */
  private enlargeRows(delta: Float32Array): void {
    const { gridWidth, gridHeight, width, wide } = this;
    if (delta.length < gridWidth * gridHeight) throw new Error('the change does not cover the grid');
    for (let gy = 0; gy < gridHeight; gy++) resampleRowDense(delta, gy * gridWidth, this.enlargeX, wide, gy * width);
  }

  /** Image row y of the enlarged change, accumulated in float32 tap by tap. */
  private interpolatedRow(y: number, row: Float32Array): void {
    const {
      width,
      wide,
      enlargement: { y: ky },
    } = this;
    row.fill(0);
    for (let k = ky.start[y]!; k < ky.start[y + 1]!; k++) {
      const w = ky.weight[k]!;
      const from = ky.index[k]! * width;
      for (let x = 0; x < width; x++) row[x]! += w * wide[from + x]!;
    }
  }

  private check(image: RawImage): void {
    if (image.width !== this.width || image.height !== this.height)
      throw new Error(`a ${this.width}×${this.height} resampler was given a ${image.width}×${image.height} image`);
  }
}

/** 1.5 · 2⁵²: x + ROUND − ROUND is x rounded to an integer, half to even (|x| < 2⁵¹). */
const ROUND = 6755399441055744;

/** into[offset + i] += w · from[i] for i < n. */
function accumulate(into: Float32Array, offset: number, w: number, from: Float32Array, n: number): void {
  for (let i = 0; i < n; i++) into[offset + i]! += w * from[i]!;
}

/** addInterpolatedRow on one 8-bit plane, answering the sum of the squared changes written. */
function addInterpolatedPlaneRow(
  plane: Uint8Array,
  clamped: Uint8ClampedArray,
  offset: number,
  wide: Float32Array,
  a: number,
  w0: number,
  b: number,
  w1: number,
  width: number,
): number {
  let squaredError = 0;
  for (let x = 0, p = offset; x < width; x++, p++) {
    const before = plane[p]!;
    clamped[p] = before + Math.fround(Math.fround(w0 * wide[a + x]!) + w1 * wide[b + x]!);
    const e = plane[p]! - before;
    squaredError += e * e;
  }
  return squaredError;
}

/** One row of the change added to the colour samples, answering the sum of the squared changes written. */
function addRow(
  pixels: Uint8Array,
  clamped: Uint8ClampedArray,
  offset: number,
  row: Float32Array,
  width: number,
  channels: number,
): number {
  const colours = channels === 1 ? 1 : 3;
  let squaredError = 0;
  for (let x = 0, p = offset; x < width; x++, p += channels) {
    const d = row[x]!;
    for (let c = 0; c < colours; c++) {
      const before = pixels[p + c]!;
      clamped[p + c] = before + d;
      const e = pixels[p + c]! - before;
      squaredError += e * e;
    }
  }
  return squaredError;
}

/**
 * addRow of w0 · wide[a + x] + w1 · wide[b + x], rounded to float32 after each term as the accumulating row
 * would be (so the pixels are the same as through it), answering the sum of the squared changes written.
 */
function addInterpolatedRow(
  pixels: Uint8Array,
  offset: number,
  wide: Float32Array,
  a: number,
  w0: number,
  b: number,
  w1: number,
  width: number,
  channels: number,
): number {
  let squaredError = 0;
  for (let x = 0, p = offset; x < width; x++, p += channels) {
    const d = Math.fround(Math.fround(w0 * wide[a + x]!) + w1 * wide[b + x]!);
    const r = pixels[p]!;
    const g = pixels[p + 1]!;
    const u = pixels[p + 2]!;
    // What the clamped view's store did (round half to even, then clamp), without its costly double conversion:
    // adding and taking off 1.5 · 2⁵² rounds a double to an integer half to even, as every JS addition rounds.
    let r1 = r + d + ROUND - ROUND;
    let g1 = g + d + ROUND - ROUND;
    let u1 = u + d + ROUND - ROUND;
    r1 = r1 < 0 ? 0 : r1 > 255 ? 255 : r1;
    g1 = g1 < 0 ? 0 : g1 > 255 ? 255 : g1;
    u1 = u1 < 0 ? 0 : u1 > 255 ? 255 : u1;
    pixels[p] = r1;
    pixels[p + 1] = g1;
    pixels[p + 2] = u1;
    const er = r1 - r;
    const eg = g1 - g;
    const eu = u1 - u;
    squaredError += er * er + eg * eg + eu * eu;
  }
  return squaredError;
}
