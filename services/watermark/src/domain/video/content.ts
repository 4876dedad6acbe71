import { describeContent } from '../image/content-registration.js';
import { gridSize } from '../image/cairn-sync-v2.js';
import { LumaResampler } from '../image/luma.js';
import { videoGridArea } from './luma-frame-mark.js';

/**
 * What a video mark is checked against (content-registration.ts): the coarse luma map of the video's first second,
 * its frames averaged, on the embedding grid its frames were marked on. Detection decides first on the same
 * one-second average of the copy's frames, and the geometry it reads the mark under places that picture on this
 * grid, so a cropped, scaled or re-encoded copy of the asset lines up with it, and other content under a lifted
 * mark does not.
 */
export function describeVideoContent(firstSecond: Uint8Array, width: number, height: number): Uint8Array {
  const [gw, gh] = gridSize(width, height, 1, videoGridArea(width, height));
  const luma = new LumaResampler(width, height, gw, gh).grid({ pixels: firstSecond, width, height, channels: 1 });
  return describeContent(luma, gw, gh);
}
