import sharp from 'sharp';
import type { RawImage } from '../../src/domain/image/raw-image.js';
import { SHARED_DIR } from '../../../../packages/testing/src/shared.js';
import { decode, encoder } from '../../bench/image/attacks.js';
import { xorshift } from '../../bench/image/images.js';

// The bench's raw-pixel plumbing and generator serve the tests too (one home: bench/image).
export { decode, encoder, xorshift };

/** Real photographs (scikit-image sample data, see the README there). */
export const PHOTOS_DIR = `${SHARED_DIR}/fixtures/photos/`;

export interface PhotoOptions {
  /** Resize to exactly this size (fit: fill) before decoding. */
  readonly size?: readonly [number, number];
  readonly gray?: boolean;
  readonly alpha?: boolean;
}

export function loadPhoto(file: string, options: PhotoOptions = {}): Promise<RawImage> {
  let image = sharp(PHOTOS_DIR + file);
  if (options.size) image = image.resize(options.size[0], options.size[1], { fit: 'fill' });
  // sharp decodes a gray PNG to three channels unless asked for one.
  image = options.gray ? image.toColourspace('b-w') : image.removeAlpha();
  if (options.alpha) image = image.ensureAlpha();
  return decode(image);
}

/** What happens to a published image on its way back to a verifier. */
export const ATTACKS = {
  none: async (image: RawImage) => image,
  'PNG round trip': async (image: RawImage) => decode(sharp(await encoder(image).png().toBuffer())),
  'WebP q90': async (image: RawImage) => decode(sharp(await encoder(image).webp({ quality: 90 }).toBuffer())),
  'JPEG q75': async (image: RawImage) => decode(sharp(await encoder(image).jpeg({ quality: 75 }).toBuffer())),
  '0.75× resize': async (image: RawImage) => decode(encoder(image).resize(Math.round(image.width * 0.75))),
  '0.75× resize then JPEG q75': async (image: RawImage) =>
    decode(
      sharp(
        await encoder(image)
          .resize(Math.round(image.width * 0.75))
          .jpeg({ quality: 75 })
          .toBuffer(),
      ),
    ),
  'JPEG q75 then 0.75× resize': async (image: RawImage) =>
    decode(sharp(await encoder(image).jpeg({ quality: 75 }).toBuffer()).resize(Math.round(image.width * 0.75))),
} as const satisfies Record<string, (image: RawImage) => Promise<RawImage>>;

export type AttackName = keyof typeof ATTACKS;

const KINDS = ['noise', 'flat', 'gradient', 'waves', 'checker', 'blocks'] as const;

/** Unmarked synthetic images of assorted sizes, channel counts and content. */
export function syntheticImage(index: number): RawImage {
  const random = xorshift(1000 + index);
  const width = 128 + Math.floor(random() * 400);
  const height = 128 + Math.floor(random() * 400);
  const channels = ([1, 3, 4] as const)[index % 3]!;
  const kind = KINDS[index % KINDS.length]!;
  const pixels = new Uint8ClampedArray(width * height * channels);
  const fx = 0.02 + random() * 0.2;
  const fy = 0.02 + random() * 0.2;
  const base = random() * 255;
  const cell = 4 + Math.floor(random() * 28);
  // Per-row and per-column tables keep Math out of the per-sample loop.
  const waveX = Float64Array.from({ length: width * 3 }, (_, i) =>
    Math.sin((i % width) * fx * (Math.floor(i / width) + 1)),
  );
  const waveY = Float64Array.from({ length: height }, (_, y) => Math.cos(y * fy));
  const cellX = Int32Array.from({ length: width }, (_, x) => Math.floor(x / cell));
  const cellY = Int32Array.from({ length: height }, (_, y) => Math.floor(y / cell));
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      for (let c = 0; c < channels; c++) {
        let v: number;
        if (c === 3) v = 255;
        else if (kind === 'noise') v = random() * 256;
        else if (kind === 'flat') v = base;
        else if (kind === 'gradient') v = (x / width) * 200 + (y / height) * 55 * (c + 1) * 0.5;
        else if (kind === 'waves') v = 128 + 110 * waveX[c * width + x]! * waveY[y]!;
        else if (kind === 'checker') v = ((cellX[x]! + cellY[y]!) % 2) * 190 + random() * 40;
        else v = ((cellX[x]! * 73 + cellY[y]! * 151 + c * 31) % 256) + random() * 8;
        pixels[(y * width + x) * channels + c] = v;
      }
    }
  }
  return { pixels: new Uint8Array(pixels.buffer), width, height, channels };
}

/** The file a caller sends (callers send encoded images, never pixels): lossless, so pixels compare exactly. */
export function png(image: RawImage): Promise<Buffer> {
  return encoder(image).png().toBuffer();
}

/** The pixels of a file the service answered with. */
export function decodeFile(bytes: Uint8Array): Promise<RawImage> {
  return decode(sharp(Buffer.from(bytes)).removeAlpha());
}
