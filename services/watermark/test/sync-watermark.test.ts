import sharp from 'sharp';
import { createHash } from 'node:crypto';
import { beforeAll, describe, expect, it } from '@jest/globals';
import { chain, cropCentral, cropSide, jpeg, resize, rotate, social, type Attack } from '../bench/image/attacks.js';
import { createKeyedImageWatermark } from '../src/domain/image/cairn-dct-keyed-v1.js';
import { createImageWatermark } from '../src/domain/image/cairn-dct-v1.js';
import { CAIRN_SYNC_V2_NAME, SyncTileWatermark } from '../src/domain/image/cairn-sync-v2.js';
import { compareContent } from '../src/domain/image/content-registration.js';
import { psnr } from '../src/domain/image/psnr.js';
import type { RawImage } from '../src/domain/image/raw-image.js';
import { ImageAlgorithms } from '../src/domain/image-tasks.js';
import type { WatermarkKey } from '../src/domain/keys.js';
import { keyedPayloadFor, payloadFor, payloadHex } from '../src/domain/payload.js';
import { DEFAULT_MEDIA_LIMITS } from '@cairn/media';
import { decodeForDetection, detectionShrink } from '../src/adapters/image-codec.js';
import { decode, encoder, loadPhoto } from './support/images.js';
import { detectTask, embedTask } from './support/tasks.js';

// Fixed keys, so that a failure reproduces; the robustness claims are measured over random keys by the bench.
const keyOf = (label: string): WatermarkKey => ({
  kid: label,
  secret: Uint8Array.from(createHash('sha256').update(label).digest()),
});
const key = keyOf('sync-test-k1');
const otherKey = keyOf('sync-test-k2');
const payload = keyedPayloadFor(key.secret, 'w_sync_victim');
const PHOTOS = ['chelsea.png', 'coffee.png'] as const;
const photos = new Map<string, RawImage>();
const marked = new Map<string, RawImage>();

/** About one megapixel, as the measurements and a typical upload. */
async function megapixel(file: string): Promise<RawImage> {
  const photo = await loadPhoto(file);
  const s = Math.sqrt(1e6 / (photo.width * photo.height));
  return decode(encoder(photo).resize(Math.round(photo.width * s), Math.round(photo.height * s)));
}

beforeAll(async () => {
  const v2 = new SyncTileWatermark(key.secret);
  for (const file of PHOTOS) {
    const photo = await megapixel(file);
    photos.set(file, photo);
    marked.set(file, v2.embed(photo, payload));
  }
});

const ATTACKS: ReadonlyArray<readonly [string, Attack]> = [
  ['crop 10% off one side', cropSide(0.1)],
  ['crop to the central 81%', cropCentral(0.81)],
  ['rotate 3° (cropped to no corners)', rotate(3)],
  ['rotate −3°', rotate(-3)],
];

describe('cairn-sync-v2', () => {
  it.each(PHOTOS)('marks %s at PSNR ≥ 42 dB and reads the payload back', (file) => {
    expect(psnr(photos.get(file)!, marked.get(file)!)).toBeGreaterThanOrEqual(42);
    const detection = new SyncTileWatermark(key.secret).detect(marked.get(file)!);
    expect(detection && payloadHex(detection.payload)).toBe(payloadHex(payload));
  });

  describe.each(ATTACKS)('after %s', (_, attack) => {
    it.each(PHOTOS)('reads the right payload from %s', async (file) => {
      const detection = new SyncTileWatermark(key.secret).detect(await attack(marked.get(file)!));
      expect(detection && payloadHex(detection.payload)).toBe(payloadHex(payload));
    });
  });

  // The bench measures it over four photos and random keys (astronaut, with large clipped areas, is the weak one):
  // asserted here on the two test photos.
  it.each(PHOTOS)('reads the social-network path (0.5×, 5% off-centre crop, JPEG q50) on %s', async (file) => {
    const detection = new SyncTileWatermark(key.secret).detect(await social(marked.get(file)!));
    expect(detection && payloadHex(detection.payload)).toBe(payloadHex(payload));
  });

  // A small photo after JPEG q75, under a key and payload found by searching 2,000 random ones: the lattice as embedded
  // read this payload with 14 % raw code-bit errors (confidence 0.41), the refined lattice with 5 %. A weak first
  // read is no longer the answer when refinement reads the same payload more clearly.
  it('answers the clearer read of a small photo after JPEG q75 when the first read is weak', async () => {
    const v2 = new SyncTileWatermark(
      Buffer.from('c0220499a5b6cebc209a69ff420107c30dd6ddc62ead8352a7aac07b1b441883', 'hex'),
    );
    const weakPayload = Buffer.from('68b0f56434d1e71e', 'hex');
    const coffee = await loadPhoto('coffee.png');
    const copy = await jpeg(75)(await decode(sharp(await encoder(v2.embed(coffee, weakPayload)).png().toBuffer())));
    const detection = v2.detect(copy);
    expect(detection && payloadHex(detection.payload)).toBe(payloadHex(weakPayload));
    expect(detection!.confidence).toBeGreaterThanOrEqual(0.7);
  });

  // astronaut, whose white and black areas (13 % of its samples at 0 or 255) carry little, was the photo the social
  // chain lost at 1 MP (3 of 6 keys in the bench's driver; under sync-test-k3 the spectral template also took JPEG's
  // blocking for the tile): the gain calibrated past the clamp, the list decoder, the fine grid and the comb's
  // further candidates read it now (docs/image.md, steps 3, 4 and 6).
  it('marks astronaut at PSNR ≥ 42 dB and reads it after the social-network path, under three keys', async () => {
    const photo = await megapixel('astronaut.png');
    for (const label of ['sync-test-k1', 'sync-test-k2', 'sync-test-k3']) {
      const secret = keyOf(label).secret;
      const own = keyedPayloadFor(secret, 'w_sync_astronaut');
      const v2 = new SyncTileWatermark(secret);
      const mark = v2.embed(photo, own);
      expect(psnr(photo, mark)).toBeGreaterThanOrEqual(42);
      const detection = v2.detect(await social(mark));
      expect(detection && payloadHex(detection.payload)).toBe(payloadHex(own));
    }
  });

  // Two copies a manual check once lost: a small picture cropped (its tile period moves by more than the nominal
  // lattice tolerates), and an upscaled one rotated, cropped and re-encoded.
  it.each(PHOTOS)('reads %s marked at 512×512 and cropped 10% off one side', async (file) => {
    const v2 = new SyncTileWatermark(key.secret);
    const small = v2.embed(await loadPhoto(file, { size: [512, 512] }), payload);
    const detection = v2.detect(await cropSide(0.1)(small));
    expect(detection && payloadHex(detection.payload)).toBe(payloadHex(payload));
  });

  it.each(PHOTOS)('reads %s marked at 512×512, then 2×, rotated 3°, cropped 10 % and JPEG q80', async (file) => {
    const v2 = new SyncTileWatermark(key.secret);
    const small = v2.embed(await loadPhoto(file, { size: [512, 512] }), payload);
    const detection = v2.detect(await chain(resize(2), rotate(3), cropSide(0.1), jpeg(80))(small));
    expect(detection && payloadHex(detection.payload)).toBe(payloadHex(payload));
  });

  it.each(PHOTOS)('finds nothing in unmarked %s, nor in its crop and rotation', async (file) => {
    const detector = new SyncTileWatermark(key.secret);
    const photo = photos.get(file)!;
    for (const image of [photo, await cropSide(0.1)(photo), await rotate(3)(photo)])
      expect(detector.detect(image)).toBeNull();
  });

  it.each(PHOTOS)('is not read from %s under another key, and another key’s mark is not read', (file) => {
    expect(new SyncTileWatermark(otherKey.secret).detect(marked.get(file)!)).toBeNull();
    const forged = new SyncTileWatermark(otherKey.secret).embed(photos.get(file)!, payload);
    expect(new SyncTileWatermark(key.secret).detect(forged)).toBeNull();
  });
});

describe('worker tasks with cairn-sync-v2', () => {
  const algorithms = new ImageAlgorithms();
  const detect = (image: RawImage, keys: WatermarkKey[]) => detectTask(algorithms, image, keys);

  it('embeds cairn-sync-v2 when asked by name, and detection names it and the key', () => {
    const photo = photos.get('chelsea.png')!;
    const embedded = embedTask(algorithms, { image: photo, payload, key, algorithm: CAIRN_SYNC_V2_NAME });
    expect(embedded).toMatchObject({ algorithm: CAIRN_SYNC_V2_NAME, keyId: key.kid });
    const outcome = detect(embedded.image, [otherKey, key]);
    expect(outcome).toMatchObject({ algorithm: CAIRN_SYNC_V2_NAME, keyId: key.kid });
    expect(payloadHex(outcome.detection!.payload)).toBe(payloadHex(payload));
  });

  it('still reads cairn-dct-keyed-v1 and keyless cairn-dct-v1 marks, each by its own name', () => {
    const photo = photos.get('coffee.png')!;
    const keyedV1 = detect(createKeyedImageWatermark(key.secret).embed(photo, payload), [key]);
    expect(keyedV1).toMatchObject({ algorithm: 'cairn-dct-keyed-v1', keyId: key.kid });
    expect(payloadHex(keyedV1.detection!.payload)).toBe(payloadHex(payload));
    const keyless = detect(createImageWatermark().embed(photo, payloadFor('w_old')), [key]);
    expect(keyless).toMatchObject({ algorithm: 'cairn-dct-v1', keyId: null });
    expect(payloadHex(keyless.detection!.payload)).toBe(payloadHex(payloadFor('w_old')));
  });

  /** Embeds through the worker task, so the outcome carries the content description the registry keeps. */
  const embedV2 = (image: RawImage) => {
    const outcome = embedTask(algorithms, { image, payload, key, algorithm: CAIRN_SYNC_V2_NAME });
    if (!outcome.content) throw new Error('embed described no content');
    return { image: outcome.image, content: outcome.content };
  };

  it.each([['none', (i: RawImage) => Promise.resolve(i)] as const, ...ATTACKS, ['the social chain', social] as const])(
    'content check: the marked photo after %s is the content the mark was embedded in',
    async (_, attack) => {
      const { image, content } = embedV2(photos.get('chelsea.png')!);
      const outcome = detect(await attack(image), [key]);
      expect(outcome.registered).toBeDefined();
      expect(compareContent(outcome.registered!, content)).toMatchObject({ consistent: true });
    },
  );

  it.each([['none', (i: RawImage) => Promise.resolve(i)] as const, ...ATTACKS])(
    'content check: the same mark on another photo (a perfect copy attack), after %s, is not that content',
    async (_, attack) => {
      const victim = embedV2(photos.get('chelsea.png')!);
      // The victim's tile exactly as the key lays it, on coffee: what a copy attack aims to produce.
      const transplant = embedV2(photos.get('coffee.png')!).image;
      const outcome = detect(await attack(transplant), [key]);
      expect(payloadHex(outcome.detection!.payload)).toBe(payloadHex(payload));
      expect(compareContent(outcome.registered!, victim.content)).toMatchObject({ consistent: false });
    },
  );

  it('answers no mark for an unmarked photo under every key', () => {
    expect(detect(photos.get('coffee.png')!, [key, otherKey]).detection).toBeNull();
  });
});

// An upload is searched at a working size (adapters/image-codec.ts): what the search reads of a large copy must be
// what it reads at full size.
describe('detection of a large upload at its working size', () => {
  it('shrinks by powers of two only what stays at least two megapixels', () => {
    expect(detectionShrink(1152, 864)).toBe(1);
    expect(detectionShrink(2000, 1999)).toBe(1);
    expect(detectionShrink(4000, 3000)).toBe(2);
    expect(detectionShrink(8000, 6000)).toBe(4);
  });

  it('reads the same mark, confidence and content from an 8 MP JPEG copy as at full size, turned by EXIF too', async () => {
    const photo = await loadPhoto('chelsea.png', { size: [3300, 2500] });
    const { image, content } = new SyncTileWatermark(key.secret).embedDescribed(photo, payload);
    const copy = await encoder(image).jpeg({ quality: 85 }).toBuffer();
    const turned = await sharp(copy).withMetadata({ orientation: 6 }).toBuffer();
    const full = await decodeForDetection(copy, DEFAULT_MEDIA_LIMITS);
    const reads = (pixels: RawImage) => new ImageAlgorithms().detect(pixels, [key]);
    const atFull = reads(full);
    expect(atFull.detection && payloadHex(atFull.detection.payload)).toBe(payloadHex(payload));
    for (const [bytes, size] of [
      [copy, [1650, 1250]],
      [turned, [1250, 1650]],
    ] as const) {
      const working = await decodeForDetection(bytes, DEFAULT_MEDIA_LIMITS, { workingSize: true });
      expect([working.width, working.height]).toEqual(size);
      const atWorking = reads(working);
      expect(atWorking.detection && payloadHex(atWorking.detection.payload)).toBe(payloadHex(payload));
      expect(atWorking.detection?.confidence).toBeCloseTo(atFull.detection!.confidence, 1);
      const correlation = (read: typeof atFull) => compareContent(read.registered!, content).correlation;
      expect(correlation(atWorking)).toBeGreaterThanOrEqual(0.95);
      expect(correlation(atWorking)).toBeCloseTo(correlation(atFull), 1);
    }
  });
});
