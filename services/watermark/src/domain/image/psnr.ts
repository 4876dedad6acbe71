import type { RawImage } from './raw-image.js';

/**
 * Peak signal-to-noise ratio of `marked` against `original` over the colour samples (alpha, which the mark
 * never touches, would only inflate it). Infinity for identical images.
 */
export function psnr(original: RawImage, marked: RawImage): number {
  if (original.width !== marked.width || original.height !== marked.height || original.channels !== marked.channels) {
    throw new Error('psnr: images differ in shape');
  }
  const { channels } = original;
  const colours = channels === 1 ? 1 : 3;
  const a = original.pixels;
  const b = marked.pixels;
  let sum = 0;
  if (colours === 3) {
    // The three colour samples unrolled: half the time of the nested loop on a 1 MP embed (about 8 → 4 ms), the
    // same sum (integers far below 2^53 add exactly in any order).
    for (let p = 0; p < a.length; p += channels) {
      const r = a[p]! - b[p]!;
      const g = a[p + 1]! - b[p + 1]!;
      const u = a[p + 2]! - b[p + 2]!;
      sum += r * r + g * g + u * u;
    }
  } else {
    for (let p = 0; p < a.length; p++) {
      const d = a[p]! - b[p]!;
      sum += d * d;
    }
  }
  return psnrOfChange(original, sum);
}

/** The PSNR of a change to `image` whose squared differences over its colour samples sum to `squaredError`. */
export function psnrOfChange(image: RawImage, squaredError: number): number {
  if (squaredError === 0) return Infinity;
  const samples = image.width * image.height * (image.channels === 1 ? 1 : 3);
  return 10 * Math.log10((255 * 255) / (squaredError / samples));
}
