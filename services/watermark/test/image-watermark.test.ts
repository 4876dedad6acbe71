import { beforeAll, describe, expect, it } from '@jest/globals';
import { createImageWatermark } from '../src/domain/image/cairn-dct-v1.js';
import { psnr } from '../src/domain/image/psnr.js';
import { ImageRejectedError, type RawImage } from '../src/domain/image/raw-image.js';
import { payloadFor } from '../src/domain/payload.js';
import {
  ATTACKS,
  decode,
  encoder,
  loadPhoto,
  syntheticImage,
  type AttackName,
  type PhotoOptions,
} from './support/images.js';

const algorithm = createImageWatermark();
const payload = payloadFor('w_01JD3M4X5Y6Z7A8B9C0D1E2F3G');
const ATTACK_NAMES = Object.keys(ATTACKS) as AttackName[];

interface Photo {
  readonly label: string;
  readonly file: string;
  readonly options?: PhotoOptions;
}

const PHOTOS: Photo[] = [
  { label: 'astronaut 512×512 RGB', file: 'astronaut.png' },
  { label: 'coffee 600×400 RGB', file: 'coffee.png' },
  { label: 'chelsea 451×300 RGB', file: 'chelsea.png' },
  { label: 'camera 512×512 gray', file: 'camera.png', options: { gray: true } },
  { label: 'astronaut upscaled 1024×1024', file: 'astronaut.png', options: { size: [1024, 1024] } },
  { label: 'coffee upscaled 2048×1536', file: 'coffee.png', options: { size: [2048, 1536] } },
];

describe.each(PHOTOS)('cairn-dct-v1 on $label', ({ file, options }) => {
  let original: RawImage;
  let marked: RawImage;

  beforeAll(async () => {
    original = await loadPhoto(file, options);
    marked = algorithm.embed(original, payload);
  });

  it('is imperceptible by PSNR (≥ 38 dB) and leaves the input untouched', async () => {
    expect(psnr(original, marked)).toBeGreaterThanOrEqual(38);
    expect(marked.pixels).not.toBe(original.pixels);
    // Buffer.equals, not toEqual: jest compares megabytes element by element.
    expect(Buffer.from((await loadPhoto(file, options)).pixels).equals(Buffer.from(original.pixels))).toBe(true);
  });

  it.each(ATTACK_NAMES)('reads the payload back after %s', async (attack) => {
    const received = await ATTACKS[attack](marked);
    const detection = algorithm.detect(received);
    expect(detection).not.toBeNull();
    expect(Buffer.from(detection!.payload).toString('hex')).toBe(Buffer.from(payload).toString('hex'));
    expect(detection!.confidence).toBeGreaterThan(0.2);
  });

  it('finds nothing in the unmarked photo, nor in its JPEG', async () => {
    expect(algorithm.detect(original)).toBeNull();
    expect(algorithm.detect(await ATTACKS['JPEG q75'](original))).toBeNull();
  });
});

describe('cairn-dct-v1 channels', () => {
  it('marks the luma of RGBA: alpha untouched, chroma kept', async () => {
    const rgb = await loadPhoto('chelsea.png');
    // A real alpha channel (a horizontal ramp), so "untouched" means something.
    const rgba = new Uint8Array(rgb.width * rgb.height * 4);
    for (let i = 0, j = 0, x = 0; i < rgb.pixels.length; i += 3, j += 4, x = x + 1 === rgb.width ? 0 : x + 1) {
      rgba[j] = rgb.pixels[i]!;
      rgba[j + 1] = rgb.pixels[i + 1]!;
      rgba[j + 2] = rgb.pixels[i + 2]!;
      rgba[j + 3] = (64 + (x * 191) / rgb.width) | 0;
    }
    const original: RawImage = { ...rgb, pixels: rgba, channels: 4 };
    const marked = algorithm.embed(original, payload);
    expect(psnr(original, marked)).toBeGreaterThanOrEqual(38);
    let chromaShift = 0;
    let alphaChanged = 0;
    for (let p = 0; p < rgba.length; p += 4) {
      const [r0, g0, b0, a0] = [rgba[p]!, rgba[p + 1]!, rgba[p + 2]!, rgba[p + 3]!];
      const [r1, g1, b1, a1] = [marked.pixels[p]!, marked.pixels[p + 1]!, marked.pixels[p + 2]!, marked.pixels[p + 3]!];
      if (a0 !== a1) alphaChanged++;
      const cb = -0.1687 * (r1 - r0) - 0.3313 * (g1 - g0) + 0.5 * (b1 - b0);
      const cr = 0.5 * (r1 - r0) - 0.4187 * (g1 - g0) - 0.0813 * (b1 - b0);
      chromaShift += (cb < 0 ? -cb : cb) + (cr < 0 ? -cr : cr);
    }
    expect(alphaChanged).toBe(0);
    // Only rounding (and clamping at black/white) moves chroma: well under one level on average.
    expect(chromaShift / (rgba.length / 4)).toBeLessThan(0.5);
    const detection = algorithm.detect(await decode(encoder(marked).png()));
    expect(detection?.payload).toEqual(payload);
  });
});

describe('cairn-dct-v1 sizes', () => {
  it('marks the smallest accepted image (256×256) robustly enough for JPEG q75 and a 0.75× resize', async () => {
    const original = await loadPhoto('chelsea.png', { size: [256, 256] });
    const marked = algorithm.embed(original, payload);
    expect(psnr(original, marked)).toBeGreaterThanOrEqual(38);
    for (const attack of ['JPEG q75', '0.75× resize', '0.75× resize then JPEG q75'] as const) {
      expect(algorithm.detect(await ATTACKS[attack](marked))?.payload).toEqual(payload);
    }
  });

  it('marks a 4096×4096 image', async () => {
    const original = await loadPhoto('astronaut.png', { size: [4096, 4096] });
    const marked = algorithm.embed(original, payload);
    expect(psnr(original, marked)).toBeGreaterThanOrEqual(38);
    expect(algorithm.detect(await ATTACKS['0.75× resize then JPEG q75'](marked))?.payload).toEqual(payload);
  });

  it('refuses to embed in an image smaller than 256 on a side, saying so', async () => {
    const small = await loadPhoto('coffee.png', { size: [600, 255] });
    expect(() => algorithm.embed(small, payload)).toThrow(ImageRejectedError);
    expect(() => algorithm.embed(small, payload)).toThrow(
      'image is 600×255; a watermark needs at least 256×256 pixels',
    );
  });

  it('answers "no mark" for an image too small to hold one instead of guessing', () => {
    expect(
      algorithm.detect({ pixels: new Uint8Array(100 * 100 * 3).fill(128), width: 100, height: 100, channels: 3 }),
    ).toBeNull();
  });

  it('rejects a pixel buffer that does not match its dimensions', () => {
    expect(() => algorithm.detect({ pixels: new Uint8Array(10), width: 300, height: 300, channels: 3 })).toThrow(
      ImageRejectedError,
    );
  });
});

describe('cairn-dct-v1 false positives', () => {
  it('decodes nothing from 60 unmarked synthetic images nor from their JPEG re-encodes', async () => {
    const found: string[] = [];
    for (let i = 0; i < 60; i++) {
      const image = syntheticImage(i);
      if (algorithm.detect(image)) found.push(`synthetic #${i}`);
      if (algorithm.detect(await ATTACKS['JPEG q75'](image))) found.push(`synthetic #${i} as JPEG`);
    }
    expect(found).toEqual([]);
  });

  it('does not read a different payload: two marks of different ids stay distinct', async () => {
    const original = await loadPhoto('coffee.png');
    const other = payloadFor('w_01JD3M4X5Y6Z7A8B9C0D1E2F3H');
    const detection = algorithm.detect(await ATTACKS['JPEG q75'](algorithm.embed(original, other)));
    expect(detection?.payload).toEqual(other);
    expect(detection?.payload).not.toEqual(payload);
  });
});

describe('psnr (what EmbedImage reports)', () => {
  const image = (channels: 1 | 3 | 4, samples: number[]): RawImage => ({
    pixels: Uint8Array.from(samples),
    width: samples.length / channels,
    height: 1,
    channels,
  });
  const expected = (squaredErrors: number, colourSamples: number) =>
    10 * Math.log10((255 * 255) / (squaredErrors / colourSamples));

  it('is 10·log10(255² / MSE) over the colour samples, alpha left out', () => {
    // RGB: errors 1, 2, 3 on the first pixel, none on the second: 14 over 6 samples.
    expect(psnr(image(3, [10, 20, 30, 40, 50, 60]), image(3, [11, 22, 33, 40, 50, 60]))).toBe(expected(14, 6));
    // The same colours with alpha that differs by 100: the alpha is not counted.
    expect(psnr(image(4, [10, 20, 30, 255, 40, 50, 60, 255]), image(4, [11, 22, 33, 155, 40, 50, 60, 155]))).toBe(
      expected(14, 6),
    );
    // Gray: errors 3 and 4, 25 over 2 samples.
    expect(psnr(image(1, [100, 100]), image(1, [103, 96]))).toBe(expected(25, 2));
    expect(psnr(image(3, [1, 2, 3]), image(3, [1, 2, 3]))).toBe(Infinity);
  });
});
