import { describe, expect, it } from '@jest/globals';
import { hamming, hashImageBytes, HASH_BYTES, pdqFingerprinter } from '../src/domain/pdq.js';
import { indexHashes } from '../src/domain/variants.js';
import { LOOKUP_RADIUS } from '../src/domain/threshold.js';
import { loadPhotos, TRANSFORMS } from './support/variants.js';

const summary = (ds: number[]) => {
  const s = [...ds].sort((a, b) => a - b);
  return { n: s.length, min: s[0]!, median: s[s.length >> 1]!, max: s[s.length - 1]! };
};

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

  it('separates transformed copies from different images (distributions printed for the README)', async () => {
    const photos = await loadPhotos();
    const full = new Map<string, Uint8Array>();
    const indexed = new Map<string, Uint8Array[]>();
    for (const p of photos) {
      full.set(p.name, (await hashImageBytes(p.bytes)).bits);
      indexed.set(p.name, (await indexHashes(pdqFingerprinter, p.bytes)).map((h) => h.bits));
    }
    const lines: string[] = [];
    const same: number[] = [];
    for (const [name, transform] of Object.entries(TRANSFORMS)) {
      const direct: number[] = [];
      const viaIndex: number[] = [];
      for (const p of photos) {
        const q = (await hashImageBytes(await transform(p.bytes))).bits;
        direct.push(hamming(full.get(p.name)!, q));
        viaIndex.push(Math.min(...indexed.get(p.name)!.map((h) => hamming(h, q))));
      }
      same.push(...viaIndex);
      lines.push(`${name}: whole-image ${JSON.stringify(summary(direct))}; nearest indexed variant ${JSON.stringify(summary(viaIndex))} [${viaIndex.join(' ')}]`);
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
    process.stdout.write(`${lines.join('\n')}\n`);
    const d = summary(different);
    expect(d.min).toBeGreaterThan(LOOKUP_RADIUS + 24);
    // Every photo: JPEG 60, resize, brightness within the radius; the shared photos also after all three.
    const photoNames = ['astronaut', 'camera', 'chelsea', 'coffee'];
    for (const p of photos.filter((x) => photoNames.includes(x.name))) {
      const q = (await hashImageBytes(await TRANSFORMS['jpeg60+resize50+crop5']!(p.bytes))).bits;
      expect(Math.min(...indexed.get(p.name)!.map((h) => hamming(h, q)))).toBeLessThanOrEqual(LOOKUP_RADIUS);
    }
  }, 120_000);
});
