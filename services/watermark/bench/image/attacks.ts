// The attacks an image watermark must survive, as sharp pipelines on raw pixels. Shared by the bench
// (services/watermark/bench/image) and the CI subset (services/watermark/test/sync-watermark.test.ts), so both
// measure the same transformations.
import sharp from 'sharp';
import type { Channels, RawImage } from '../../src/domain/image/raw-image.js';

export type Attack = (image: RawImage) => Promise<RawImage>;

export async function decode(input: sharp.Sharp): Promise<RawImage> {
  const { data, info } = await input.raw().toBuffer({ resolveWithObject: true });
  return {
    pixels: new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
    width: info.width,
    height: info.height,
    channels: info.channels as Channels,
  };
}

export function encoder(image: RawImage): sharp.Sharp {
  return sharp(Buffer.from(image.pixels.buffer, image.pixels.byteOffset, image.pixels.byteLength), {
    raw: { width: image.width, height: image.height, channels: image.channels },
  });
}

/** Encoded and decoded again, as a platform re-encoding an upload does. */
const reencode = async (s: sharp.Sharp, format: 'jpeg' | 'webp' | 'png', quality = 80): Promise<RawImage> =>
  decode(
    sharp(
      await (format === 'png' ? s.png() : format === 'webp' ? s.webp({ quality }) : s.jpeg({ quality })).toBuffer(),
    ),
  );

export const jpeg =
  (quality: number): Attack =>
  (i) =>
    reencode(encoder(i), 'jpeg', quality);
export const webp =
  (quality: number): Attack =>
  (i) =>
    reencode(encoder(i), 'webp', quality);
export const resize =
  (factor: number): Attack =>
  (i) =>
    decode(
      encoder(i).resize(Math.max(1, Math.round(i.width * factor)), Math.max(1, Math.round(i.height * factor)), {
        fit: 'fill',
      }),
    );
/**
 * A `width`×`height` window of `i`, its left and top edges at `fx` and `fy` of the room the window leaves
 * (0.5, 0.5: centred).
 */
const windowOf = (i: RawImage, width: number, height: number, fx: number, fy: number): Promise<RawImage> =>
  decode(
    encoder(i).extract({
      left: Math.floor((i.width - width) * fx),
      top: Math.floor((i.height - height) * fy),
      width,
      height,
    }),
  );
/** Keeps the central `area` fraction (same aspect). */
export const cropCentral =
  (area: number): Attack =>
  (i) => {
    const s = Math.sqrt(area);
    return windowOf(i, Math.round(i.width * s), Math.round(i.height * s), 0.5, 0.5);
  };
/** Cuts `fraction` of the width off the right side. */
export const cropSide =
  (fraction: number): Attack =>
  (i) =>
    decode(encoder(i).extract({ left: 0, top: 0, width: Math.round(i.width * (1 - fraction)), height: i.height }));
/** Removes `area` of the picture as an off-centre window (kept window touches the top-left quadrant). */
export const cropOffCentre =
  (area: number): Attack =>
  (i) => {
    const s = Math.sqrt(1 - area);
    return windowOf(i, Math.round(i.width * s), Math.round(i.height * s), 0.25, 0.75);
  };
/** Rotates by `degrees` and crops to the largest axis-aligned rectangle with no filled corners, as editors do. */
export const rotate =
  (degrees: number): Attack =>
  async (i) => {
    if (degrees % 90 === 0) return decode(encoder(i).rotate(degrees));
    const rotated = await decode(encoder(i).rotate(degrees, { background: { r: 0, g: 0, b: 0 } }));
    const t = Math.abs((degrees * Math.PI) / 180);
    const cos = Math.cos(t);
    const sin = Math.sin(t);
    // Largest inscribed rectangle of the original's aspect inside the rotated frame.
    const k = Math.min(i.width / (i.width * cos + i.height * sin), i.height / (i.width * sin + i.height * cos));
    return windowOf(rotated, Math.floor(i.width * k), Math.floor(i.height * k), 0.5, 0.5);
  };
export const flip: Attack = (i) => decode(encoder(i).flop());
/** Multiplies every channel by `factor` (brightness ±20 %: 0.8 and 1.2). */
export const brightness =
  (factor: number): Attack =>
  (i) =>
    decode(encoder(i).linear(factor, 0));
/** Contrast about mid-grey. */
export const contrast =
  (factor: number): Attack =>
  (i) =>
    decode(encoder(i).linear(factor, 128 * (1 - factor)));
export const gamma =
  (g: number): Attack =>
  async (i) => {
    const out = Uint8Array.from(i.pixels);
    const table = Array.from({ length: 256 }, (_, v) => Math.round(255 * (v / 255) ** g));
    for (let p = 0; p < out.length; p++) out[p] = table[out[p]!]!;
    return { ...i, pixels: out };
  };
/** Additive Gaussian noise of standard deviation sigma (deterministic seed). */
export const noise =
  (sigma: number): Attack =>
  async (i) => {
    const out = Uint8ClampedArray.from(i.pixels);
    let state = 0x9e3779b9;
    const uniform = () => {
      state ^= state << 13;
      state ^= state >>> 17;
      state ^= state << 5;
      return ((state >>> 0) + 0.5) / 4294967296;
    };
    for (let p = 0; p < out.length; p += 2) {
      const r = Math.sqrt(-2 * Math.log(uniform()));
      const a = 2 * Math.PI * uniform();
      out[p] = i.pixels[p]! + sigma * r * Math.cos(a);
      if (p + 1 < out.length) out[p + 1] = i.pixels[p + 1]! + sigma * r * Math.sin(a);
    }
    return { ...i, pixels: new Uint8Array(out.buffer) };
  };
export const blur =
  (sigma: number): Attack =>
  (i) =>
    decode(encoder(i).blur(sigma));
export const median3: Attack = (i) => decode(encoder(i).median(3));
export const grayscale: Attack = async (i) => {
  const g = await decode(encoder(i).grayscale().toColourspace('b-w'));
  // Back to the input's channel count: a grey picture in an RGB file, as platforms deliver it.
  return decode(encoder(g).toColourspace('srgb'));
};
/** A border of `fraction` of each side's length added around the picture (white). */
export const border =
  (fraction: number): Attack =>
  (i) => {
    const x = Math.round(i.width * fraction);
    const y = Math.round(i.height * fraction);
    return decode(encoder(i).extend({ top: y, bottom: y, left: x, right: x, background: { r: 255, g: 255, b: 255 } }));
  };
/**
 * A dark patch laid over the picture, as a caption bar across the bottom (`height` of the picture's height) or a logo
 * in the bottom-right corner (`height` of the height, 1.5 times as wide in the width's share).
 */
export const overlay =
  (height: number, where: 'caption' | 'logo'): Attack =>
  async (i) => {
    const h = Math.round(i.height * height);
    const w = where === 'caption' ? i.width : Math.round(i.width * height * 1.5);
    const patch = await sharp({ create: { width: w, height: h, channels: 3, background: { r: 10, g: 10, b: 10 } } })
      .png()
      .toBuffer();
    return decode(encoder(i).composite([{ input: patch, left: i.width - w, top: i.height - h }]));
  };
export const chain =
  (...steps: Attack[]): Attack =>
  async (i) => {
    let image = i;
    for (const step of steps) image = await step(image);
    return image;
  };
/** Resize then crop 5 % of the area off-centre then JPEG q50: a social network's path. */
export const social: Attack = chain(resize(0.5), cropOffCentre(0.05), jpeg(50));
export const screenshot: Attack = chain(resize(0.9), jpeg(80));
/** Aspect change: the width alone scaled by `factor`. */
export const aspect =
  (factor: number): Attack =>
  (i) =>
    decode(encoder(i).resize(Math.round(i.width * factor), i.height, { fit: 'fill' }));

/** The attack table (services/watermark/README.md), in its order. */
export const ISSUE_ATTACKS: ReadonlyArray<readonly [string, Attack]> = [
  ['none', async (i) => i],
  ['JPEG q50', jpeg(50)],
  ['JPEG q30', jpeg(30)],
  ['WebP q60', webp(60)],
  ['resize 0.5×', resize(0.5)],
  ['resize 2×', resize(2)],
  ['crop 10% one side', cropSide(0.1)],
  ['crop central 81%', cropCentral(0.81)],
  ['crop 25% off-centre', cropOffCentre(0.25)],
  ['rotate +3°', rotate(3)],
  ['rotate −3°', rotate(-3)],
  ['rotate 90°', rotate(90)],
  ['horizontal flip', flip],
  ['brightness +20%', brightness(1.2)],
  ['brightness −20%', brightness(0.8)],
  ['contrast ×0.8', contrast(0.8)],
  ['contrast ×1.2', contrast(1.2)],
  ['gamma 0.7', gamma(0.7)],
  ['gamma 1.5', gamma(1.5)],
  ['noise σ5', noise(5)],
  ['noise σ10', noise(10)],
  ['blur σ1', blur(1)],
  ['blur σ2', blur(2)],
  ['median 3×3', median3],
  ['grayscale', grayscale],
  ['border 5%', border(0.05)],
  ['screenshot 0.9× + JPEG q80', screenshot],
  ['social 0.5× + 5% crop + JPEG q50', social],
  ['aspect 0.8× width', aspect(0.8)],
  ['rotate +5°', rotate(5)],
  ['scale 0.25×', resize(0.25)],
];
