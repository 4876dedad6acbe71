/**
 * Separable linear resampling with a tent kernel (bilinear when enlarging, an anti-aliasing triangle filter
 * as wide as the scale factor when reducing). Sample centres are aligned the way image scalers align them
 * ((i + 0.5) · scale − 0.5), so that resizing an image and resampling it to the grid commute closely: that is
 * what makes the mark survive a resize.
 */

/** Sparse weights: output i = Σ weight[k] · input[index[k]] for k in [start[i], start[i + 1]). */
export interface Kernel1D {
  readonly inSize: number;
  readonly outSize: number;
  readonly start: Int32Array;
  readonly index: Int32Array;
  readonly weight: Float64Array;
}

export function tentKernel(inSize: number, outSize: number): Kernel1D {
  const scale = inSize / outSize;
  const radius = Math.max(1, scale);
  const start = new Int32Array(outSize + 1);
  const index: number[] = [];
  const weight: number[] = [];
  for (let i = 0; i < outSize; i++) {
    const centre = (i + 0.5) * scale - 0.5;
    const first = Math.max(0, Math.ceil(centre - radius));
    const last = Math.min(inSize - 1, Math.floor(centre + radius));
    let sum = 0;
    const from = index.length;
    for (let j = first; j <= last; j++) {
      const w = 1 - Math.abs(j - centre) / radius;
      if (w <= 0) continue;
      index.push(j);
      weight.push(w);
      sum += w;
    }
    if (index.length === from) {
      // Only possible at an edge when enlarging: take the nearest sample.
      index.push(Math.min(inSize - 1, Math.max(0, Math.round(centre))));
      weight.push(1);
      sum = 1;
    }
    for (let k = from; k < weight.length; k++) weight[k] = weight[k]! / sum;
    start[i + 1] = index.length;
  }
  return { inSize, outSize, start, index: Int32Array.from(index), weight: Float64Array.from(weight) };
}

/** The kernel of `second ∘ first` (first applied, then second) as one sparse kernel. */
export function composeKernels(first: Kernel1D, second: Kernel1D): Kernel1D {
  if (first.outSize !== second.inSize) throw new Error('kernel sizes do not chain');
  const start = new Int32Array(second.outSize + 1);
  const index: number[] = [];
  const weight: number[] = [];
  const row = new Float64Array(first.inSize);
  for (let i = 0; i < second.outSize; i++) {
    row.fill(0);
    for (let k = second.start[i]!; k < second.start[i + 1]!; k++) {
      const mid = second.index[k]!;
      const w = second.weight[k]!;
      for (let m = first.start[mid]!; m < first.start[mid + 1]!; m++) row[first.index[m]!]! += w * first.weight[m]!;
    }
    for (let j = 0; j < row.length; j++) {
      const w = row[j]!;
      if (w > 1e-12 || w < -1e-12) {
        index.push(j);
        weight.push(w);
      }
    }
    start[i + 1] = index.length;
  }
  return {
    inSize: first.inSize,
    outSize: second.outSize,
    start,
    index: Int32Array.from(index),
    weight: Float64Array.from(weight),
  };
}

/** Resamples a row-major plane (width = kx.inSize, height = ky.inSize) to kx.outSize × ky.outSize. */
export function resamplePlane(src: Float32Array, kx: Kernel1D, ky: Kernel1D): Float32Array {
  const inW = kx.inSize;
  const outW = kx.outSize;
  const tmp = new Float32Array(outW * ky.inSize);
  for (let y = 0; y < ky.inSize; y++) resampleRow(src, y * inW, kx, tmp, y * outW);
  const dst = new Float32Array(outW * ky.outSize);
  for (let y = 0; y < ky.outSize; y++) {
    const out = y * outW;
    for (let k = ky.start[y]!; k < ky.start[y + 1]!; k++) {
      const w = ky.weight[k]!;
      const from = ky.index[k]! * outW;
      for (let x = 0; x < outW; x++) dst[out + x]! += w * tmp[from + x]!;
    }
  }
  return dst;
}

/**
 * A kernel with the same number of taps for every output, each a run of consecutive inputs from `first[i]`
 * (missing taps weigh 0). The weights and the order of the sums are the sparse kernel's, so results are
 * identical; the inner loop loses its index indirection and its variable bounds.
 */
export interface DenseKernel1D {
  readonly inSize: number;
  readonly outSize: number;
  readonly taps: number;
  readonly first: Int32Array;
  /** outSize × taps, row-major. */
  readonly weight: Float64Array;
}

export function denseKernel(kernel: Kernel1D): DenseKernel1D {
  const { inSize, outSize, start, index, weight } = kernel;
  let taps = 1;
  for (let i = 0; i < outSize; i++) {
    if (start[i + 1]! > start[i]!) taps = Math.max(taps, index[start[i + 1]! - 1]! - index[start[i]!]! + 1);
  }
  taps = Math.min(taps, inSize);
  const first = new Int32Array(outSize);
  const dense = new Float64Array(outSize * taps);
  for (let i = 0; i < outSize; i++) {
    const from = start[i]!;
    // The run starts at the first input used, moved left if it would run past the end (the extra taps weigh 0).
    const at = Math.min(index[from]!, inSize - taps);
    first[i] = at;
    for (let k = from; k < start[i + 1]!; k++) dense[i * taps + index[k]! - at] = weight[k]!;
  }
  return { inSize, outSize, taps, first, weight: dense };
}

/** For each input index, the outputs that use it and with what weight (a kernel read backwards). */
export interface ScatterKernel1D {
  readonly start: Int32Array;
  readonly output: Int32Array;
  readonly weight: Float64Array;
}

/** The kernel's taps grouped by input, in increasing output order (so sums accumulate in the gather's order). */
export function scatterKernel(kernel: Kernel1D): ScatterKernel1D {
  const { inSize, outSize, start, index, weight } = kernel;
  const count = new Int32Array(inSize + 1);
  for (let k = 0; k < index.length; k++) count[index[k]! + 1]!++;
  for (let j = 0; j < inSize; j++) count[j + 1]! += count[j]!;
  const fill = count.slice(0, inSize);
  const output = new Int32Array(index.length);
  const scattered = new Float64Array(index.length);
  for (let i = 0; i < outSize; i++) {
    for (let k = start[i]!; k < start[i + 1]!; k++) {
      const at = fill[index[k]!]!++;
      output[at] = i;
      scattered[at] = weight[k]!;
    }
  }
  return { start: count, output, weight: scattered };
}

/** One row through a dense kernel: dst[dstOffset + i] = Σ w · src[srcOffset + first[i] + t]. */
export function resampleRowDense(
  src: Float32Array,
  srcOffset: number,
  kernel: DenseKernel1D,
  dst: Float32Array,
  dstOffset: number,
): void {
  const { taps, first, weight, outSize } = kernel;
  // Four taps per step (about a third off a 1 MP image's reduction to the grid, eight taps per output), then the
  // rest: the terms are added in the same order, so the sums are the loop's to the bit.
  const quads = taps & ~3;
  for (let i = 0, w = 0; i < outSize; i++) {
    let s = srcOffset + first[i]!;
    let acc = 0;
    let t = 0;
    for (; t < quads; t += 4, w += 4, s += 4) {
      acc += weight[w]! * src[s]!;
      acc += weight[w + 1]! * src[s + 1]!;
      acc += weight[w + 2]! * src[s + 2]!;
      acc += weight[w + 3]! * src[s + 3]!;
    }
    for (; t < taps; t++, w++, s++) acc += weight[w]! * src[s]!;
    dst[dstOffset + i] = acc;
  }
}

/** One row through a 1-D kernel: dst[dstOffset + i] = Σ w · src[srcOffset + j]. */
export function resampleRow(
  src: ArrayLike<number>,
  srcOffset: number,
  kernel: Kernel1D,
  dst: Float32Array,
  dstOffset: number,
): void {
  const { start, index, weight } = kernel;
  for (let i = 0; i < kernel.outSize; i++) {
    let acc = 0;
    for (let k = start[i]!; k < start[i + 1]!; k++) acc += weight[k]! * src[srcOffset + index[k]!]!;
    dst[dstOffset + i] = acc;
  }
}
