import { describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { decimate, hamming, HASH_BYTES, luminance, pdqGrid, WORK_SIDE } from '../src/domain/pdq.js';
import { hashImageBytes, pdqFingerprinter } from '../src/adapters/image-hash.js';
import sharp from 'sharp';
import { CROP_FRACTION, indexHashes } from '../src/adapters/image-variants.js';
import { LOOKUP_RADIUS } from '../src/domain/threshold.js';
import { loadPhotos, TRANSFORMS } from './support/variants.js';

const summary = (ds: number[]) => {
  const s = [...ds].sort((a, b) => a - b);
  return { n: s.length, min: s[0]!, median: s[s.length >> 1]!, max: s[s.length - 1]! };
};

/** `<photo> <transform>` pairs whose nearest indexed variant is beyond LOOKUP_RADIUS, as measured. */
const KNOWN_MISSES: string[] = [];

describe('PDQ-class image hash', () => {
  it('is 256 bits, deterministic, with a quality', async () => {
    const [photo] = await loadPhotos();
    const a = await hashImageBytes(photo!.bytes);
    const b = await hashImageBytes(photo!.bytes);
    expect(a.bits).toHaveLength(HASH_BYTES);
    expect(hamming(a.bits, b.bits)).toBe(0);
    expect(a.quality).toBeGreaterThan(50);
    // Median threshold: half the bits set.
    let ones = 0;
    for (const byte of a.bits) for (let i = 0; i < 8; i++) ones += (byte >> i) & 1;
    expect(ones).toBeGreaterThanOrEqual(120);
    expect(ones).toBeLessThanOrEqual(136);
  });

  it('takes the grid of a working-size picture from its cells alone, the values the box-filter passes give', () => {
    // Grey, RGB and RGBA at the working size take the short path; 200×150 takes the passes on both sides.
    for (const [width, height, channels] of [
      [WORK_SIDE, WORK_SIDE, 1],
      [WORK_SIDE, WORK_SIDE, 3],
      [WORK_SIDE, WORK_SIDE, 4],
      [200, 150, 3],
    ] as const) {
      const pixels = new Uint8Array(randomBytes(width * height * channels));
      const passes = decimate(luminance(pixels, width, height, channels), width, height);
      expect(Buffer.from(pdqGrid(pixels, width, height, channels).buffer)).toEqual(Buffer.from(passes.buffer));
    }
  });

  it('indexes each variant as the hash of a lossless file of it (an 8-bit file is cut and shrunk as raw pixels)', async () => {
    const [photo] = await loadPhotos();
    // A signed photo: EXIF-rotated 8-bit JPEG, as the signer may deliver it.
    const signed = await sharp(photo!.bytes)
      .resize(640, 480)
      .jpeg({ quality: 90 })
      .withMetadata({ orientation: 6 })
      .toBuffer();
    const indexed = new Map((await indexHashes(pdqFingerprinter, signed)).map((h) => [h.variant, h]));
    const lossless = await sharp(signed).rotate().png({ compressionLevel: 0 }).toBuffer({ resolveWithObject: true });
    const { width, height } = lossless.info;
    const [w, h] = [Math.round(width * (1 - CROP_FRACTION)), Math.round(height * (1 - CROP_FRACTION))];
    const crop = await sharp(lossless.data)
      .extract({ left: width - w, top: height - h, width: w, height: h })
      .png({ compressionLevel: 0 })
      .toBuffer();
    const quarter = await sharp(crop)
      .resize(Math.round(w / 4), Math.round(h / 4), { fit: 'fill' })
      .png({ compressionLevel: 0 })
      .toBuffer();
    const expected = {
      full: await hashImageBytes(lossless.data),
      'crop5-br': await hashImageBytes(crop),
      'crop5-br@quarter': await hashImageBytes(quarter),
    };
    expect(indexed.size).toBe(12);
    for (const [variant, hash] of Object.entries(expected)) {
      expect(Buffer.from(indexed.get(variant)!.bits).toString('hex')).toBe(Buffer.from(hash.bits).toString('hex'));
      expect(indexed.get(variant)!.quality).toBe(hash.quality);
    }
  });

  it('finds every transformed copy within the lookup radius of its nearest indexed variant, and no different photo', async () => {
    const photos = await loadPhotos();
    const full = new Map<string, Uint8Array>();
    const indexed = new Map<string, Uint8Array[]>();
    for (const p of photos) {
      full.set(p.name, (await hashImageBytes(p.bytes)).bits);
      indexed.set(
        p.name,
        (await indexHashes(pdqFingerprinter, p.bytes)).map((h) => h.bits),
      );
    }
    const lines: string[] = [];
    const misses: string[] = [];
    for (const [name, transform] of Object.entries(TRANSFORMS)) {
      const direct: number[] = [];
      const viaIndex: number[] = [];
      for (const p of photos) {
        const q = (await hashImageBytes(await transform(p.bytes))).bits;
        direct.push(hamming(full.get(p.name)!, q));
        viaIndex.push(Math.min(...indexed.get(p.name)!.map((h) => hamming(h, q))));
      }
      photos.forEach((p, i) => {
        if (viaIndex[i]! > LOOKUP_RADIUS) misses.push(`${p.name} ${name} ${viaIndex[i]}`);
      });
      lines.push(
        `${name}: whole-image ${JSON.stringify(summary(direct))}; nearest indexed variant ${JSON.stringify(summary(viaIndex))} [${viaIndex.join(' ')}]`,
      );
    }
    // Different content: every pair of different photos, nearest over the indexed variants.
    const different: number[] = [];
    for (let i = 0; i < photos.length; i++) {
      for (let j = 0; j < photos.length; j++) {
        if (i === j) continue;
        const q = full.get(photos[j]!.name)!;
        different.push(Math.min(...indexed.get(photos[i]!.name)!.map((h) => hamming(h, q))));
      }
    }
    lines.push(`different content (${photos.length} photos, ordered pairs): ${JSON.stringify(summary(different))}`);
    // The distributions, for docs/image.md's table and threshold.ts.
    process.stdout.write(`${lines.join('\n')}\n`);
    const d = summary(different);
    expect(d.min).toBeGreaterThan(LOOKUP_RADIUS + 24);
    // Every photo after every transform lands within the radius, except the misses measured and listed in the service
    // docs (docs/image.md: line-art and low-quality images after a resize or a brightening). The list is exact: a new
    // miss fails, and so does a known one that is found again (update the list and docs/image.md then).
    expect(misses.map((m) => m.replace(/ \d+$/, ''))).toEqual(KNOWN_MISSES);
  }, 120_000);
});
