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
  for (let p = 0; p < a.length; p += channels) {
    for (let c = 0; c < colours; c++) {
      const d = a[p + c]! - b[p + c]!;
      sum += d * d;
    }
  }
  if (sum === 0) return Infinity;
  const mse = sum / ((a.length / channels) * colours);
  return 10 * Math.log10((255 * 255) / mse);
}
