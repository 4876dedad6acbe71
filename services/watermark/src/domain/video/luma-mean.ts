/**
 * Running sums of 8-bit luma planes and their rounded means: how a video's frames become one-second windows and
 * the windows one picture to decide on. Sums are whole numbers (Uint32: 16 million frames of 255 before they wrap),
 * so the mean is exact before it is rounded.
 *
 * The loops read no globals (no Math.round): a global looked up per pixel is ~60× slower where the code runs in a vm
 * context (the in-process fleet under Jest), and a 720p plane is 921 600 of them on the service's event loop.
 */

/** A plane's running sum, one entry a pixel. */
export function lumaSum(pixels: number): Uint32Array {
  return new Uint32Array(pixels);
}

/** Adds `plane` into `sum`, pixel by pixel. */
export function addLuma(sum: Uint32Array, plane: ArrayLike<number>): void {
  const length = sum.length;
  for (let i = 0; i < length; i++) sum[i] = sum[i]! + plane[i]!;
}

/** The mean of `count` planes summed in `sum`, rounded half up to 8 bits (as Math.round on these non-negatives). */
export function meanLuma(sum: Uint32Array, count: number): Uint8Array {
  const length = sum.length;
  const mean = new Uint8Array(length);
  for (let i = 0; i < length; i++) mean[i] = (sum[i]! / count + 0.5) | 0;
  return mean;
}
