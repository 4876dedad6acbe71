// Measures cairn-sync-v2's content check (content-registration.ts) on both sides: the signed photo after each
// attack of the table against its own descriptor (must be consistent), and other photos carrying the same mark
// (a perfect copy attack: the tile added to unrelated content), plain and attacked, against the victim's
// descriptor (must not be). Used by services/watermark/bench/watermark.ts; runnable alone:
//   node --import tsx services/watermark/bench/image/content-check.ts
import { randomBytes } from 'node:crypto';
import { readdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import sharp from 'sharp';
import { SHARED_DIR } from '../../../../packages/testing/src/shared.js';
import { SyncTileWatermark, analyseSync } from '../../src/domain/image/cairn-sync-v2.js';
import { compareContent, registeredPoints } from '../../src/domain/image/content-registration.js';
import type { RawImage } from '../../src/domain/image/raw-image.js';
import { keyedPayloadFor } from '../../src/domain/payload.js';
import { ISSUE_ATTACKS, chain, cropCentral, decode, flip, jpeg, overlay, rotate, type Attack } from './attacks.js';

// The shared folder beside the repository (a worktree sits one level deeper than the main checkout).
const SHARED = `${SHARED_DIR}/fixtures/`;

export interface ContentCheckRun {
  /** Per attack: [consistent, read] over the signed photos. */
  readonly genuine: Array<{ attack: string; consistent: number; read: number; minCorrelation: number }>;
  /** Transplants read by the detector, how many passed the check, the highest correlation among them. */
  readonly transplants: { read: number; passed: number; maxCorrelation: number };
}

async function megapixel(path: string): Promise<RawImage> {
  const meta = await sharp(path).metadata();
  const s = Math.sqrt(1e6 / ((meta.width ?? 1) * (meta.height ?? 1)));
  return decode(
    sharp(path)
      .rotate()
      .removeAlpha()
      .toColourspace('srgb')
      .resize(Math.round((meta.width ?? 1) * s), Math.round((meta.height ?? 1) * s), { fit: 'fill' }),
  );
}

function check(v2: SyncTileWatermark, image: RawImage, descriptor: Uint8Array) {
  const analysis = analyseSync(image);
  const read = analysis ? v2.decodeRegistered(analysis) : null;
  if (!analysis || !read) return null;
  return compareContent(registeredPoints(analysis.luma, analysis.width, analysis.height, read.geometry), descriptor);
}

/**
 * Honest copies a user makes beside the attack table: a 10 % crop, a quarter turn or a mirror, each saved as JPEG q50;
 * a caption bar or a logo laid over the picture, saved as JPEG q85.
 */
export const COPY_CHAINS: ReadonlyArray<readonly [string, Attack]> = [
  ['crop 10% + JPEG q50', chain(cropCentral(0.81), jpeg(50))],
  ['rotate 90° + JPEG q50', chain(rotate(90), jpeg(50))],
  ['mirror + JPEG q50', chain(flip, jpeg(50))],
  ['caption bar 10% + JPEG q85', chain(overlay(0.1, 'caption'), jpeg(85))],
  ['caption bar 20% + JPEG q85', chain(overlay(0.2, 'caption'), jpeg(85))],
  ['logo 20% + JPEG q85', chain(overlay(0.2, 'logo'), jpeg(85))],
  ['logo 35% + JPEG q85', chain(overlay(0.35, 'logo'), jpeg(85))],
];

export async function contentCheck(
  attacks: ReadonlyArray<readonly [string, Attack]> = [...ISSUE_ATTACKS, ...COPY_CHAINS],
): Promise<ContentCheckRun> {
  const photos = (await readdir(`${SHARED}photos`))
    .filter((f) => f.endsWith('.png'))
    .map((f) => `${SHARED}photos/${f}`);
  const others = (await readdir(`${SHARED}c2pa-rs`))
    .filter((f) => f.endsWith('.jpg'))
    .map((f) => `${SHARED}c2pa-rs/${f}`);
  const key = Uint8Array.from(randomBytes(32));
  const v2 = new SyncTileWatermark(key);
  const payload = keyedPayloadFor(key, 'w_content_check');
  const images = new Map<string, RawImage>();
  for (const path of [...photos, ...others]) images.set(path, await megapixel(path));
  const marked = new Map<string, { image: RawImage; content: Uint8Array }>();
  for (const path of images.keys()) marked.set(path, v2.embedDescribed(images.get(path)!, payload));

  const genuine: ContentCheckRun['genuine'] = [];
  for (const [name, attack] of attacks) {
    let consistent = 0;
    let read = 0;
    let minCorrelation = 1;
    for (const path of photos) {
      const { image, content } = marked.get(path)!;
      const result = check(v2, await attack(image), content);
      if (!result) continue;
      read++;
      if (result.consistent) consistent++;
      minCorrelation = Math.min(minCorrelation, result.correlation);
    }
    genuine.push({ attack: name, consistent, read, minCorrelation });
  }
  // Every other image carrying the victim's tile, plain and after a few attacks, against the victim's descriptor.
  const transplantAttacks = attacks.filter(([name]) =>
    [
      'none',
      'JPEG q50',
      'crop central 81%',
      'rotate +3°',
      'horizontal flip',
      'social 0.5× + 5% crop + JPEG q50',
      'crop 10% + JPEG q50',
      'rotate 90° + JPEG q50',
    ].includes(name),
  );
  let tRead = 0;
  let passed = 0;
  let maxCorrelation = -1;
  for (const victim of photos) {
    const { content } = marked.get(victim)!;
    for (const host of marked.keys()) {
      if (host === victim) continue;
      for (const [, attack] of transplantAttacks) {
        const result = check(v2, await attack(marked.get(host)!.image), content);
        if (!result) continue;
        tRead++;
        if (result.consistent) passed++;
        maxCorrelation = Math.max(maxCorrelation, result.correlation);
      }
    }
  }
  return { genuine, transplants: { read: tRead, passed, maxCorrelation } };
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const run = await contentCheck();
  for (const g of run.genuine)
    console.log(
      `ratio image honest "${g.attack}" consistent ${g.consistent}/${g.read} = ${(g.read ? g.consistent / g.read : 0).toFixed(3)}  (min r ${g.minCorrelation.toFixed(3)})`,
    );
  const t = run.transplants;
  console.log(
    `ratio image transplant passed ${t.passed}/${t.read} = ${(t.read ? t.passed / t.read : 0).toFixed(3)}  (max r ${t.maxCorrelation.toFixed(3)})`,
  );
}
