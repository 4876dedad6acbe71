import { createHash } from 'node:crypto';
import { beforeAll, describe, expect, it } from '@jest/globals';
import { jpeg } from '../bench/image/attacks.js';
import { lowTextureClass } from '../bench/image/images.js';
import { SyncTileWatermark, SYNC_STRENGTH_LEVELS } from '../src/domain/image/cairn-sync-v2.js';
import type { RawImage } from '../src/domain/image/raw-image.js';
import { flatShare, paletteShare, startLevel } from '../src/domain/image/readback.js';
import { keyedPayloadFor } from '../src/domain/payload.js';
import { decode, encoder, loadPhoto } from './support/images.js';

const UNIFORM = SYNC_STRENGTH_LEVELS.length - 1;
const hosts = new Map<string, RawImage>();

beforeAll(async () => {
  for (const file of ['astronaut.png', 'camera.png', 'chelsea.png', 'coffee.png']) {
    const photo = await loadPhoto(file);
    const s = Math.sqrt(1e6 / (photo.width * photo.height));
    hosts.set(file, await decode(encoder(photo).resize(Math.round(photo.width * s), Math.round(photo.height * s))));
  }
  // The low-texture class at its tuning seed (bench/image/images.ts).
  for (const host of await lowTextureClass(30)) hosts.set(host.label, host.image);
});

describe('the strength level a mark starts at (EmbedImage, content-adaptive)', () => {
  it('photographs start at level 0, the perceptual mask their robustness lines are measured with', () => {
    for (const file of ['astronaut.png', 'camera.png', 'chelsea.png', 'coffee.png'])
      expect([file, startLevel(hosts.get(file)!)]).toEqual([file, 0]);
  });

  it('a screenshot (a few flat colours, fine text) starts at the uniform level, though it is no flatter than a photo', () => {
    const screenshot = hosts.get('screenshot')!;
    expect(flatShare(screenshot)).toBeLessThan(0.45);
    expect(paletteShare(screenshot)).toBeGreaterThan(0.9);
    expect(startLevel(screenshot)).toBe(UNIFORM);
    for (const label of ['plain grey', 'linear gradient', 'line art', 'scan'])
      expect([label, startLevel(hosts.get(label)!)]).toEqual([label, UNIFORM]);
  });

  it('a screenshot marked at its start level still reads after JPEG q50', async () => {
    const key = Uint8Array.from(createHash('sha256').update('readback-level-k1').digest());
    const payload = keyedPayloadFor(key, 'w_screenshot');
    const wm = new SyncTileWatermark(key);
    const screenshot = hosts.get('screenshot')!;
    const { image } = wm.embedDescribed(screenshot, payload, { level: startLevel(screenshot) });
    const read = wm.detect(await jpeg(50)(image));
    expect(read && Buffer.from(read.payload).toString('hex')).toBe(Buffer.from(payload).toString('hex'));
  });
});
