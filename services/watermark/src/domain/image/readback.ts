import { gridSize, SYNC_STRENGTH_LEVELS } from './cairn-sync-v2.js';
import { lumaGrid } from './luma.js';
import type { RawImage } from './raw-image.js';

/** The strength levels an image mark is tried at before its sign is answered without it (cairn-sync-v2 only). */
export const READBACK_LEVELS = SYNC_STRENGTH_LEVELS.length;

/**
 * Below this mean local contrast (luma levels, 3×3 standard deviation on the embedding grid) a picture is "flat":
 * a plain colour, a smooth gradient, a scan of blank paper. The mark is added to such content all the same (its
 * gain is set by PSNR, not by the picture), and reads back on the ones measured; this only names why it did not.
 */
const FLAT_CONTRAST = 1.5;
/** Pixels at or below this alpha show nothing; a lossy encoder (WebP) may rewrite their colour. */
const INVISIBLE_ALPHA = 8;
/** Above this share of invisible pixels the picture is "mostly transparent". */
const TRANSPARENT_SHARE = 0.5;

/** The share of pixels (every 7th) whose alpha hides them; 0 without an alpha channel. */
function transparentShare(image: RawImage): number {
  if (image.channels !== 4) return 0;
  let hidden = 0;
  let n = 0;
  for (let i = 3; i < image.pixels.length; i += 4 * 7, n++) if (image.pixels[i]! <= INVISIBLE_ALPHA) hidden++;
  return n > 0 ? hidden / n : 0;
}

/** Below this side the tile repeats too few times for the lattice search (3 periods across at 256² samples). */
const SMALL_SIDE = 384;

/**
 * Why an image's mark did not read back from its own encoded output at any strength level, in words for the sign
 * answer and the audit entry: too small, too flat, or (otherwise) its content or encoding defeats the mark.
 */
export function unreadableReason(image: RawImage): string {
  if (transparentShare(image) > TRANSPARENT_SHARE)
    return `image mostly transparent: ${Math.round(100 * transparentShare(image))} % of its pixels show nothing (the mark lives in the colour, which the encoder does not keep under transparent pixels)`;
  const side = Math.min(image.width, image.height);
  if (side < SMALL_SIDE)
    return `image too small: ${image.width}×${image.height}, the mark is specified for ${SMALL_SIDE} pixels a side and more`;
  const contrast = meanLocalContrast(image);
  if (contrast < FLAT_CONTRAST)
    return `content too flat: mean local contrast ${contrast.toFixed(2)} luma levels (a plain colour or smooth gradient carries too little mark within the fidelity floor)`;
  return `the mark did not read back from the encoded image at any strength within the fidelity floor (PSNR ≥ 42 dB); content such as this (repetitive texture, mean local contrast ${contrast.toFixed(1)} levels) defeats it`;
}

/** Mean 3×3 standard deviation of the luma on the embedding grid (levels): how much texture the picture has. */
export function meanLocalContrast(image: RawImage): number {
  const [gw, gh] = gridSize(image.width, image.height);
  const luma = lumaGrid(image, gw, gh);
  let sum = 0;
  let n = 0;
  for (let y = 1; y < gh - 1; y++) {
    for (let x = 1; x < gw - 1; x++) {
      sum += deviation3x3(luma, gw, x, y);
      n++;
    }
  }
  return n > 0 ? sum / n : 0;
}

/** Standard deviation of the 3×3 luma around inner grid sample (x, y) (levels). */
function deviation3x3(luma: Float32Array, gw: number, x: number, y: number): number {
  let s = 0;
  let q = 0;
  for (let dy = -1; dy <= 1; dy++)
    for (let dx = -1; dx <= 1; dx++) {
      const v = luma[(y + dy) * gw + x + dx]!;
      s += v;
      q += v * v;
    }
  const mean = s / 9;
  return Math.sqrt(Math.max(0, q / 9 - mean * mean));
}

/** A grid sample whose 3×3 luma deviation is below this (levels) is flat: it has nothing to hide a mark in. */
const FLAT_SAMPLE = 0.75;

/** The share of the embedding grid's samples that are flat (see FLAT_SAMPLE). */
export function flatShare(image: RawImage): number {
  const [gw, gh] = gridSize(image.width, image.height);
  return flatShareOfGrid(lumaGrid(image, gw, gh), gw, gh);
}

/** flatShare of the embedding grid's luma as the embedding has it already. */
function flatShareOfGrid(luma: Float32Array, gw: number, gh: number): number {
  let flat = 0;
  let n = 0;
  for (let y = 1; y < gh - 1; y++) {
    for (let x = 1; x < gw - 1; x++, n++) if (deviation3x3(luma, gw, x, y) < FLAT_SAMPLE) flat++;
  }
  return n > 0 ? flat / n : 0;
}

/**
 * Content at least this flat (share of flat grid samples) starts at the flattest strength level: plain colours,
 * gradients, scans, line art. Measured (bench/watermark.ts --low-texture-only, and the bench's own hosts):
 * the four photos sit at 0.04–0.34 and the bench textures below 0.03, so every photo line is made as before; the
 * low-texture class's plain, gradient, scan and line-art hosts at 0.48–1.
 */
const FLAT_CONTENT = 0.45;

/** Luma levels counted by paletteShare: a screenshot's or a drawing's few colours, and their anti-aliasing. */
const PALETTE_LEVELS = 8;

/**
 * The share of the picture (every 7th pixel) whose luma, in whole levels, is one of its PALETTE_LEVELS most common:
 * near 1 for content drawn in a few flat colours (screenshots, line art, plain colours), low for anything a camera
 * took (sensor noise and shading spread a photo's luma over the whole range).
 */
export function paletteShare(image: RawImage): number {
  const { pixels, channels, width, height } = image;
  const counts = new Uint32Array(256);
  let n = 0;
  for (let p = 0; p < width * height; p += 7, n++) {
    const at = p * channels;
    const luma = channels >= 3 ? 0.299 * pixels[at]! + 0.587 * pixels[at + 1]! + 0.114 * pixels[at + 2]! : pixels[at]!;
    counts[Math.round(luma)]!++;
  }
  const top = [...counts].sort((a, b) => b - a).slice(0, PALETTE_LEVELS);
  return n > 0 ? top.reduce((sum, c) => sum + c, 0) / n : 0;
}

/**
 * Content with at least this palette share (paletteShare) is drawn, not photographed, and starts at the uniform
 * level as flat content does, however much of it is fine detail (a screenshot's text: flatShare 0.35, as much as a
 * photo's). Measured (bench/watermark.ts, its photos at 1 and 4 MP; the low-texture class, tuning seed 30): the
 * four photos 0.08–0.17; the screenshot, the line art and the plain hosts 1.0, the scan 0.53, gradients and the
 * upscaled textures 0.05–0.29. The screenshot marked at level 0 missed 13 of the 31 attack lines on the tuning
 * seed, at the uniform level 6 (docs/content-classes.md).
 */
const PALETTE_CONTENT = 0.6;

/**
 * The strength level an image's mark starts at (content-adaptive): the last, uniform-mask level for flat content
 * and for content drawn in a few colours, whose perceptual mask would otherwise leave most of the mark in its
 * edges and text and too little of it where the picture is flat (the mask is relative to the mean contrast, which
 * the edges dominate); level 0 for everything else.
 */
export function startLevel(image: RawImage): number {
  const [gw, gh] = gridSize(image.width, image.height);
  return startLevelOfGrid(image, lumaGrid(image, gw, gh), gw, gh);
}

/**
 * startLevel from the embedding grid's luma (`gw` × `gh`, gridSize of the image) the embedding computes anyway: the
 * worker chooses the level as it embeds (ImageAlgorithms, level 'content'), without a second pass over the pixels.
 */
export function startLevelOfGrid(image: RawImage, luma: Float32Array, gw: number, gh: number): number {
  const uniform = flatShareOfGrid(luma, gw, gh) >= FLAT_CONTENT || paletteShare(image) >= PALETTE_CONTENT;
  return uniform ? SYNC_STRENGTH_LEVELS.length - 1 : 0;
}
