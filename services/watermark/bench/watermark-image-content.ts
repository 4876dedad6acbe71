/**
 * bench:watermark-image-content — the content check that guards an image watermark's lead (cairn-sync-v2's
 * registration, domain/image/content-registration.ts), both sides, on hosts made for it and used by no other
 * bench: the fixture photographs at crops, scales and aspects the other benches do not use (upscaled, grey,
 * portrait, native crops of a large photo), the low-texture class (plain, gradients, upscaled grass and grain, a
 * scan, line art, a screenshot) at a fresh seed, and two colour textures.
 *
 * Each host is signed as EmbedImage signs it (bench/image/sign.ts: read back from its own encoded file,
 * escalating), every host carrying the same payload under one key. Every transform line of the image bench
 * (attacks.ts ISSUE_ATTACKS, and content-check.ts COPY_CHAINS) is applied to each signed file and the mark read as
 * DetectImage reads it (analyseSync, decodeRegistered). Where it reads, the received picture is placed on the
 * embedding grid through the recovered geometry and compared with
 *  - its own host's description (an honest copy: named is the line, 100 %), and
 *  - every other host's description (the victim's mark on unrelated content with the right key, a transplant:
 *    named is the line, 0 %); hosts showing the same picture (another crop, in grey) are counted apart.
 * A copy whose mark does not read is no watermark lead (the fingerprint lookup finds it, or nothing): `unread`.
 *
 * Sets: `tuning` (low-texture seed 47: what MIN_PEAK_CORRELATION, MIN_PEAK_MARGIN and the off-peak grid were chosen on) and `judging`
 * (other crops and scales, seed 59, other textures; the default).
 *   pnpm bench:watermark-image-content [--set tuning|judging] [--hosts N] [--seed S]
 */
import { createHash, randomBytes } from 'node:crypto';
import sharp from 'sharp';
import { SHARED_DIR } from '../../../packages/testing/src/shared.js';
import { analyseSync, SyncTileWatermark } from '../src/domain/image/cairn-sync-v2.js';
import {
  compareContent,
  MIN_PEAK_CORRELATION,
  MIN_PEAK_MARGIN,
  registeredPoints,
} from '../src/domain/image/content-registration.js';
import type { RawImage } from '../src/domain/image/raw-image.js';
import { keyedPayloadFor } from '../src/domain/payload.js';
import { decode, ISSUE_ATTACKS, type Attack } from './image/attacks.js';
import { COPY_CHAINS } from './image/content-check.js';
import { lowTextureClass, syntheticTexture, type ClassHost } from './image/images.js';
import { signImage } from './image/sign.js';

const SHARED = `${SHARED_DIR}/fixtures/`;

/**
 * The picture each host shows, where two hosts show the same one: a transplant between them is no transplant onto
 * unrelated content. E-sig-CA.jpg is XCA.jpg in colour; the class's plain and near-plain hosts are one grey level.
 */
const pictureOf = new Map<string, string>();

/** A fixture photograph cut and scaled: `region` in source pixels (left, top, width, height; default: all), then `size`. */
type Photo = readonly [
  label: string,
  file: string,
  size: readonly [number, number],
  format: ClassHost['format'],
  region?: readonly [number, number, number, number],
];

async function photo([label, file, size, format, region]: Photo): Promise<ClassHost> {
  let pipeline = sharp(`${SHARED}${file}`).rotate().removeAlpha().toColourspace('srgb');
  if (region) pipeline = pipeline.extract({ left: region[0], top: region[1], width: region[2], height: region[3] });
  const image = await decode(pipeline.resize(size[0], size[1], { fit: 'fill' }).toColourspace('srgb'));
  if (image.channels !== 3) throw new Error(`${file}: ${image.channels} channels after conversion to sRGB`);
  pictureOf.set(label, file === 'c2pa-rs/E-sig-CA.jpg' ? 'c2pa-rs/XCA.jpg' : file);
  return { label, image, format };
}

type SetName = 'tuning' | 'judging';

/** The low-texture class at seeds neither the strength levels nor the low-texture bench (30, 31) used. */
const SEEDS: Record<SetName, number> = { tuning: 47, judging: 59 };

const PHOTOS: Record<SetName, readonly Photo[]> = {
  tuning: [
    ['astronaut, top-left 400×300 ×3', 'photos/astronaut.png', [1200, 900], 'image/jpeg', [0, 0, 400, 300]],
    ['coffee ×2.5', 'photos/coffee.png', [1500, 1000], 'image/jpeg'],
    ['chelsea, right 300² ×2', 'photos/chelsea.png', [600, 600], 'image/png', [151, 0, 300, 300]],
    ['camera (grey), centre 448² ×2', 'photos/camera.png', [896, 896], 'image/png', [32, 32, 448, 448]],
    ['no_manifest, native crop 1200×900', 'c2pa-rs/no_manifest.jpg', [1200, 900], 'image/jpeg', [840, 560, 1200, 900]],
    ['E-sig-CA ×0.78', 'c2pa-rs/E-sig-CA.jpg', [800, 533], 'image/jpeg'],
    ['XCA (grey), portrait 500×683 ×1.3', 'c2pa-rs/XCA.jpg', [650, 888], 'image/jpeg', [262, 0, 500, 683]],
    ['cloud ×2.4', 'c2pa-rs/cloud.jpg', [900, 900], 'image/jpeg'],
  ],
  judging: [
    ['astronaut, bottom-right 300² ×3.2', 'photos/astronaut.png', [960, 960], 'image/png', [212, 212, 300, 300]],
    ['coffee, left 400² ×2', 'photos/coffee.png', [800, 800], 'image/jpeg', [0, 0, 400, 400]],
    ['chelsea ×2.2', 'photos/chelsea.png', [992, 660], 'image/jpeg'],
    ['camera (grey) ×1.37', 'photos/camera.png', [700, 700], 'image/jpeg'],
    ['no_manifest ×0.6', 'c2pa-rs/no_manifest.jpg', [1260, 900], 'image/jpeg'],
    ['XCA (grey), native', 'c2pa-rs/XCA.jpg', [1024, 683], 'image/png'],
    ['E-sig-CA, native left 700×683', 'c2pa-rs/E-sig-CA.jpg', [700, 683], 'image/jpeg', [0, 0, 700, 683]],
    ['cloud, top 375×250 ×3', 'c2pa-rs/cloud.jpg', [1125, 750], 'image/jpeg', [0, 0, 375, 250]],
  ],
};

/** Two colour textures a set: [seed index, width, height, format]. */
const TEXTURES: Record<SetName, ReadonlyArray<readonly [number, number, number, ClassHost['format']]>> = {
  tuning: [
    [4242, 1000, 750, 'image/jpeg'],
    [4243, 1280, 720, 'image/png'],
  ],
  judging: [
    [4244, 900, 900, 'image/jpeg'],
    [4245, 1400, 800, 'image/png'],
  ],
};

async function hosts(set: SetName): Promise<ClassHost[]> {
  // One at a time, in order: `photo` also records each label's picture.
  const photos: ClassHost[] = [];
  for (const p of PHOTOS[set]) photos.push(await photo(p));
  const seed = SEEDS[set];
  const synthetic: ClassHost[] = (await lowTextureClass(seed)).map((h) => ({
    ...h,
    label: `${h.label} (seed ${seed})`,
  }));
  for (const h of synthetic) if (/^(plain grey|near-plain) /.test(h.label)) pictureOf.set(h.label, 'plain grey');
  const textures: ClassHost[] = TEXTURES[set].map(([index, width, height, format]) => ({
    label: `texture ${width}×${height}`,
    image: syntheticTexture(index, width, height),
    format,
  }));
  return [...photos, ...synthetic, ...textures];
}

interface Tally {
  /** Another host showing the same picture (another crop, or in grey): derived content, counted apart. */
  samePicture: number;
  samePictureNamed: number;
  honestRead: number;
  honestNamed: number;
  unread: number;
  transplants: number;
  transplantsNamed: number;
  minOwnR: number;
  maxOtherR: number;
  failures: string[];
}

const newTally = (): Tally => ({
  samePicture: 0,
  samePictureNamed: 0,
  honestRead: 0,
  honestNamed: 0,
  unread: 0,
  transplants: 0,
  transplantsNamed: 0,
  minOwnR: 1,
  maxOtherR: -1,
  failures: [],
});

/** The counts a line adds to the total (its r extremes and failures are the line's own). */
const COUNTS = [
  'samePicture',
  'samePictureNamed',
  'honestRead',
  'honestNamed',
  'unread',
  'transplants',
  'transplantsNamed',
] as const;

function addCounts(total: Tally, line: Tally): void {
  for (const k of COUNTS) total[k] += line[k];
}

const hostArg = process.argv.indexOf('--hosts');
const setArg = process.argv.indexOf('--set');
const set: SetName = setArg > 0 && process.argv[setArg + 1] === 'tuning' ? 'tuning' : 'judging';
const all = await hosts(set);
console.log(`# ${set} set`);
const chosen = hostArg > 0 ? all.slice(0, Number(process.argv[hostArg + 1])) : all;
// --seed S: the key (and so every mark) is the same in every run, so two versions of the code compare on the same
// copies; without it each run draws a key, and the copies whose mark does not read vary with it.
const seedArg = process.argv.indexOf('--seed');
const key = Uint8Array.from(
  seedArg > 0
    ? createHash('sha256')
        .update(`image-content|${process.argv[seedArg + 1]}`)
        .digest()
    : randomBytes(32),
);
if (seedArg > 0) console.log(`# key from --seed ${process.argv[seedArg + 1]}`);
const wm = new SyncTileWatermark(key);
const payload = keyedPayloadFor(key, 'w_image_content_bench');
const hex = (p: Uint8Array) => Buffer.from(p).toString('hex');

const signed: Array<{ host: ClassHost; image: RawImage; content: Uint8Array }> = [];
for (const host of chosen) {
  const s = await signImage(wm, host.image, host.format, payload);
  if (!s) {
    console.log(`# ${host.label}: no level reads back (watermark_not_embedded): no watermark lead to check`);
    continue;
  }
  signed.push({ host, image: s.image, content: s.content });
}
console.log(`# ${signed.length} signed hosts: ${signed.map((s) => s.host.label).join('; ')}`);

const lines: ReadonlyArray<readonly [string, Attack]> = [...ISSUE_ATTACKS, ...COPY_CHAINS];
const total = newTally();
/**
 * Transplants correlating at all (r ≥ 0.4), with how near the peak rule they came: the lesser of r − MIN_PEAK_CORRELATION
 * and (r − off) − MIN_PEAK_MARGIN (named when both reach 0).
 */
const margins: Array<[number, string]> = [];
for (const [line, attack] of lines) {
  const t = newTally();
  for (const owner of signed) {
    const copy = await attack(owner.image);
    const analysis = analyseSync(copy);
    const read = analysis ? wm.decodeRegistered(analysis) : null;
    if (!analysis || !read || hex(read.detection.payload) !== hex(payload)) {
      t.unread++;
      continue;
    }
    const points = registeredPoints(analysis.luma, analysis.width, analysis.height, read.geometry);
    for (const victim of signed) {
      const c = compareContent(points, victim.content);
      if (victim === owner) {
        t.honestRead++;
        if (c.consistent) t.honestNamed++;
        else
          t.failures.push(
            `${owner.host.label} r ${c.correlation.toFixed(3)} off ${c.offCorrelation.toFixed(3)} in ${c.inside.toFixed(2)}`,
          );
        t.minOwnR = Math.min(t.minOwnR, c.correlation);
      } else if (
        pictureOf.has(owner.host.label) &&
        pictureOf.get(owner.host.label) === pictureOf.get(victim.host.label)
      ) {
        t.samePicture++;
        if (c.consistent) t.samePictureNamed++;
      } else {
        t.transplants++;
        if (c.consistent) {
          t.transplantsNamed++;
          t.failures.push(
            `TRANSPLANT ${victim.host.label} ← ${owner.host.label} r ${c.correlation.toFixed(3)} off ${c.offCorrelation.toFixed(3)}`,
          );
        }
        if (c.correlation >= 0.4)
          margins.push([
            Math.min(c.correlation - MIN_PEAK_CORRELATION, c.correlation - c.offCorrelation - MIN_PEAK_MARGIN),
            `${victim.host.label} ← ${owner.host.label} r ${c.correlation.toFixed(3)} off ${c.offCorrelation.toFixed(3)} (${line})`,
          ]);
        t.maxOtherR = Math.max(t.maxOtherR, c.correlation);
      }
    }
  }
  console.log(
    `ratio image-content honest "${line}" named ${t.honestNamed}/${t.honestRead} = ${(t.honestRead ? t.honestNamed / t.honestRead : 0).toFixed(3)}` +
      `  transplant named ${t.transplantsNamed}/${t.transplants}  (unread ${t.unread}; r own min ${t.minOwnR.toFixed(3)}, other max ${t.maxOtherR.toFixed(3)})`,
  );
  for (const f of t.failures) console.log(`#   ${f}`);
  addCounts(total, t);
}
console.log(
  `ratio image-content honest named ${total.honestNamed}/${total.honestRead} = ${(total.honestNamed / Math.max(1, total.honestRead)).toFixed(3)} (copies whose mark reads; ${total.unread} did not read)`,
);
console.log(
  `ratio image-content transplant named ${total.transplantsNamed}/${total.transplants} = ${(total.transplantsNamed / Math.max(1, total.transplants)).toFixed(3)}`,
);
console.log(
  `# the same picture on another host (another crop, in grey): named ${total.samePictureNamed}/${total.samePicture}`,
);
margins.sort((a, b) => b[0] - a[0]);
console.log(
  `# transplants with r ≥ 0.4: ${margins.length}; the nearest the peak rule (min(r − ${MIN_PEAK_CORRELATION}, r − off − ${MIN_PEAK_MARGIN})): ${margins
    .slice(0, 5)
    .map(([m, what]) => `${m.toFixed(3)} ${what}`)
    .join('; ')}`,
);
