/**
 * Single coefficients of the orthonormal 8×8 DCT-II. The mark touches a handful of coefficients per block, so
 * it projects onto those basis functions (and adds multiples of them back) instead of transforming whole
 * blocks: with an orthonormal basis that changes exactly the chosen coefficients and nothing else.
 */
export const BLOCK = 8;

/** A coefficient by its horizontal (u) and vertical (v) frequency. */
export interface Frequency {
  readonly u: number;
  readonly v: number;
}

/** The 64 samples of basis function (u, v), row-major (index y · 8 + x). */
export function basis({ u, v }: Frequency): Float64Array {
  const a = (k: number) => (k === 0 ? Math.sqrt(1 / BLOCK) : Math.sqrt(2 / BLOCK));
  const out = new Float64Array(BLOCK * BLOCK);
  for (let y = 0; y < BLOCK; y++) {
    for (let x = 0; x < BLOCK; x++) {
      out[y * BLOCK + x] =
        a(u) *
        a(v) *
        Math.cos(((2 * x + 1) * u * Math.PI) / (2 * BLOCK)) *
        Math.cos(((2 * y + 1) * v * Math.PI) / (2 * BLOCK));
    }
  }
  return out;
}

/** Coefficient of the block whose top-left sample is `origin` in a plane of row length `stride`. */
export function project(plane: Float32Array, origin: number, stride: number, b: Float64Array): number {
  let acc = 0;
  for (let y = 0; y < BLOCK; y++) {
    const row = origin + y * stride;
    const by = y * BLOCK;
    for (let x = 0; x < BLOCK; x++) acc += plane[row + x]! * b[by + x]!;
  }
  return acc;
}

/** Adds `amount` × basis function to the block at `origin`. */
export function addBasis(plane: Float32Array, origin: number, stride: number, b: Float64Array, amount: number): void {
  for (let y = 0; y < BLOCK; y++) {
    const row = origin + y * stride;
    const by = y * BLOCK;
    for (let x = 0; x < BLOCK; x++) plane[row + x]! += amount * b[by + x]!;
  }
}
