import { relative } from 'node:path';
// Image watermark benchmark: cairn-sync-v2 against cairn-dct-keyed-v1 over the repository's photographs
// (../shared/fixtures/photos, scaled to 1 and 4 MP) and synthetic textures.
//
//   pnpm bench:watermark [--quick] [--keys N] [--seed S] [--unmarked N] [--out DIR] [--low-texture-only] [--low-texture-seeds 30,31]
//
// Ends with the low-texture class (flat, smooth, grayscale, upscaled hosts: services/watermark/bench/image/low-texture.ts),
// marked and read back as a sign does; --low-texture-only runs that class alone.
// Prints: PSNR/SSIM, the attack table (TPR per attack for both algorithms), the false-positive count over the
// unmarked set, embed/detect ms per megapixel, cairn-sync-v2's content check on both sides, and writes the curves (SVG) to --out (default
// services/watermark/docs/). Ends with `ratio <name> <value>` lines.
//
// TPR: the share of marked images whose *right* payload is read. The detector is a decision (check + confidence
// floor), not a score; its false-positive rate at that operating point is measured on the unmarked set (nothing
// may be detected there), so "TPR at 0.1 % FPR" is the TPR at an operating point whose measured FPR is 0/N.
import { createHash, randomBytes } from 'node:crypto';
import os from 'node:os';
import { mkdir, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import sharp from 'sharp';
import type { ImageWatermarkAlgorithm } from '../src/domain/image/algorithm.js';
import { createKeyedImageWatermark } from '../src/domain/image/cairn-dct-keyed-v1.js';
import { SyncTileWatermark } from '../src/domain/image/cairn-sync-v2.js';
import { psnr } from '../src/domain/image/psnr.js';
import type { RawImage } from '../src/domain/image/raw-image.js';
import { keyedPayloadFor } from '../src/domain/payload.js';
import { ISSUE_ATTACKS, blur, cropCentral, decode, jpeg, noise, resize, rotate, type Attack } from './image/attacks.js';
import { contentCheck } from './image/content-check.js';
import { lowTextureBench, printLowTexture } from './image/low-texture.js';
import { ssim, syntheticTexture, unmarkedSet } from './image/images.js';
import { lineChartsSvg, type Panel } from './image/svg.js';
import { SHARED_DIR } from '../../../packages/testing/src/shared.js';

const PHOTOS_DIR = `${SHARED_DIR}/fixtures/photos/`;
const PHOTOS = ['astronaut.png', 'camera.png', 'chelsea.png', 'coffee.png'];
const { values } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    keys: { type: 'string' },
    seed: { type: 'string' },
    unmarked: { type: 'string' },
    out: { type: 'string', default: fileURLToPath(new URL('../docs/', import.meta.url)) },
    'low-texture-only': { type: 'boolean', default: false },
    'low-texture-seeds': { type: 'string', default: '30,31' },
  },
});
const quick = values.quick;
const keyCount = Number(values.keys ?? (quick ? 1 : 3));
const unmarkedCount = Number(values.unmarked ?? (quick ? 200 : 2000));
const sizes = quick ? [1e6] : [1e6, 4e6];
const textures = quick ? 1 : 4;

interface Algo {
  readonly name: string;
  make(key: Uint8Array): ImageWatermarkAlgorithm;
}
const ALGOS: Algo[] = [
  { name: 'cairn-sync-v2', make: (key) => new SyncTileWatermark(key) },
  { name: 'cairn-dct-keyed-v1', make: (key) => createKeyedImageWatermark(key) },
];

async function scaled(file: string, pixels: number): Promise<RawImage> {
  const meta = await sharp(PHOTOS_DIR + file).metadata();
  const s = Math.sqrt(pixels / ((meta.width ?? 1) * (meta.height ?? 1)));
  return decode(
    sharp(PHOTOS_DIR + file)
      .removeAlpha()
      .toColourspace('srgb')
      .resize(Math.round((meta.width ?? 1) * s), Math.round((meta.height ?? 1) * s), { fit: 'fill' }),
  );
}

const hosts: Array<{ label: string; image: RawImage }> = [];
for (const pixels of sizes) {
  for (const file of PHOTOS)
    hosts.push({ label: `${file.replace('.png', '')} ${pixels / 1e6}MP`, image: await scaled(file, pixels) });
}
for (let t = 0; t < textures; t++) hosts.push({ label: `texture ${t} 1MP`, image: syntheticTexture(t, 1000, 1000) });

// --seed makes the keys (and so the marks) the same in every run, so two versions of the code compare on equal terms.
const seed = values.seed;
const keys = Array.from({ length: keyCount }, (_, i) =>
  Uint8Array.from(seed === undefined ? randomBytes(32) : createHash('sha256').update(`${seed}|${i}`).digest()),
);
const lowTextureSeeds = values['low-texture-seeds'].split(',').map(Number);
if (values['low-texture-only']) {
  printLowTexture(await lowTextureBench(keys, lowTextureSeeds), lowTextureSeeds);
  process.exit(0);
}
const hex = (p: Uint8Array) => Buffer.from(p).toString('hex');
const cpu = {
  embed: new Map<string, number[]>(),
  detect: new Map<string, number[]>(),
  detectUnmarked: new Map<string, number[]>(),
};
// The machine is shared: the load average is sampled through the run and reported with the timings.
const loads: number[] = [os.loadavg()[0]!];
const loadSampler = setInterval(() => loads.push(os.loadavg()[0]!), 15_000);
const startedAt = new Date();
/**
 * CPU milliseconds this process spent since `t0`: the work of one core (embed and detect run on the calling thread),
 * unlike wall time, which on a shared machine counts the other processes' turns too.
 */
const cpuMs = (t0: NodeJS.CpuUsage) => {
  const used = process.cpuUsage(t0);
  return (used.user + used.system) / 1000;
};
const record = (m: Map<string, number[]>, name: string, msPerMp: number) =>
  m.set(name, [...(m.get(name) ?? []), msPerMp]);

// Marked copies: every host under every key, for both algorithms.
interface Marked {
  algo: string;
  key: Uint8Array;
  payload: Uint8Array;
  host: string;
  image: RawImage;
  psnr: number;
  ssim: number;
}
const marked: Marked[] = [];
for (const key of keys) {
  const payload = keyedPayloadFor(key, `w_bench_${hex(key).slice(0, 8)}`);
  for (const algo of ALGOS) {
    const wm = algo.make(key);
    for (const { label, image } of hosts) {
      const t0 = process.cpuUsage();
      const out = wm.embed(image, payload);
      record(cpu.embed, algo.name, cpuMs(t0) / ((image.width * image.height) / 1e6));
      marked.push({
        algo: algo.name,
        key,
        payload,
        host: label,
        image: out,
        psnr: psnr(image, out),
        ssim: ssim(image, out),
      });
    }
  }
}

/** Detection; timed per megapixel when `timed` (the marked hosts at 1 and 4 MP: small images are fixed cost). */
function detectTimed(
  algo: string,
  key: Uint8Array,
  image: RawImage,
  timed = false,
): ReturnType<ImageWatermarkAlgorithm['detect']> {
  const wm = detectors.get(`${algo}|${hex(key)}`)!;
  const t0 = process.cpuUsage();
  const found = wm.detect(image);
  if (timed) record(cpu.detect, algo, cpuMs(t0) / ((image.width * image.height) / 1e6));
  return found;
}
const detectors = new Map<string, ImageWatermarkAlgorithm>();
for (const key of keys) for (const algo of ALGOS) detectors.set(`${algo.name}|${hex(key)}`, algo.make(key));

// Detection on the hosts before marking: the verifier runs it on every picture it is sent, most of them unmarked.
for (const key of keys) {
  for (const algo of ALGOS) {
    const wm = detectors.get(`${algo.name}|${hex(key)}`)!;
    for (const { image } of hosts) {
      const t0 = process.cpuUsage();
      wm.detect(image);
      record(cpu.detectUnmarked, algo.name, cpuMs(t0) / ((image.width * image.height) / 1e6));
    }
  }
}

// The attack table.
const table = new Map<string, Map<string, { hit: number; n: number }>>();
for (const [attackName, attack] of ISSUE_ATTACKS) {
  const row = new Map<string, { hit: number; n: number }>();
  for (const m of marked) {
    const attacked = await attack(m.image);
    const found = detectTimed(m.algo, m.key, attacked, attackName === 'none');
    const cell = row.get(m.algo) ?? { hit: 0, n: 0 };
    cell.n++;
    if (found && hex(found.payload) === hex(m.payload)) cell.hit++;
    row.set(m.algo, cell);
  }
  table.set(attackName, row);
  process.stderr.write('.');
}
process.stderr.write('\n');

// False positives: unmarked photos, their transforms, synthetic textures (each key's detectors).
const unmarked = await unmarkedSet(
  hosts.filter((h) => h.label.startsWith('texture') === false && h.label.endsWith('1MP')).map((h) => h.image),
  ISSUE_ATTACKS,
  unmarkedCount,
);
const falsePositives = new Map<string, number>();
for (const image of unmarked) {
  for (const algo of ALGOS) {
    if (detectTimed(algo.name, keys[0]!, image))
      falsePositives.set(algo.name, (falsePositives.get(algo.name) ?? 0) + 1);
  }
}

// Curves: detection rate against attack strength, 1 MP photos, first key.
const CURVES: Array<{ title: string; x: string; points: Array<[number, Attack]> }> = [
  { title: 'JPEG', x: 'quality', points: [90, 70, 50, 40, 30, 20, 10].map((q) => [q, jpeg(q)]) },
  {
    title: 'Crop (central)',
    x: 'area kept',
    points: [1, 0.9, 0.81, 0.7, 0.6, 0.5, 0.4].map((a) => [a, cropCentral(a)]),
  },
  {
    title: 'Rotation',
    x: 'degrees',
    points: [0, 1, 2, 3, 5, 8, 12].map((d) => [d, d === 0 ? async (i: RawImage) => i : rotate(d)]),
  },
  {
    title: 'Gaussian noise',
    x: 'σ',
    points: [0, 5, 10, 15, 20, 30].map((s) => [s, s === 0 ? async (i: RawImage) => i : noise(s)]),
  },
  { title: 'Scale', x: 'factor', points: [0.25, 0.5, 0.75, 1, 1.5, 2].map((f) => [f, resize(f)]) },
  { title: 'Gaussian blur', x: 'σ', points: [0.5, 1, 2, 3, 4].map((s) => [s, blur(s)]) },
];
const curveHosts = marked.filter((m) => m.key === keys[0] && m.host.endsWith(' 1MP') && !m.host.startsWith('texture'));
const panels: Panel[] = [];
for (const curve of CURVES) {
  const series = ALGOS.map((algo) => ({ name: algo.name, points: [] as Array<[number, number]> }));
  for (const [x, attack] of curve.points) {
    for (const s of series) {
      const ms = curveHosts.filter((m) => m.algo === s.name);
      let hit = 0;
      for (const m of ms) {
        const found = detectTimed(m.algo, m.key, await attack(m.image));
        if (found && hex(found.payload) === hex(m.payload)) hit++;
      }
      s.points.push([x, hit / ms.length]);
    }
  }
  panels.push({ title: curve.title, x: curve.x, series });
}
await mkdir(values.out, { recursive: true });
const svgPath = `${values.out}watermark-curves${quick ? '-quick' : ''}.svg`;
await writeFile(svgPath, lineChartsSvg(panels));

// Report.
const pct = (c: { hit: number; n: number } | undefined) =>
  c ? `${((100 * c.hit) / c.n).toFixed(0)}% (${c.hit}/${c.n})` : '-';
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
clearInterval(loadSampler);
loads.push(os.loadavg()[0]!);
console.log(`\nhosts: ${hosts.map((h) => h.label).join(', ')}; keys: ${keyCount}; unmarked: ${unmarked.length}`);
console.log(
  `run: ${startedAt.toISOString()} to ${new Date().toISOString()}, ${os.availableParallelism()} cores, load average (1 min) ` +
    `min ${Math.min(...loads).toFixed(1)} / median ${median(loads).toFixed(1)} / max ${Math.max(...loads).toFixed(1)}; ` +
    'times are CPU time of the calling thread per megapixel\n',
);
console.log(
  '| algorithm | PSNR dB min / median | SSIM min / median | embed ms/MP (median) | detect ms/MP (median, marked) | detect ms/MP (median, unmarked hosts) | false positives |',
);
console.log('|---|---|---|---|---|---|---|');
for (const algo of ALGOS) {
  const ms = marked.filter((m) => m.algo === algo.name && !m.host.startsWith('texture'));
  const p = ms.map((m) => m.psnr);
  const s = ms.map((m) => m.ssim);
  console.log(
    `| ${algo.name} | ${Math.min(...p).toFixed(1)} / ${median(p).toFixed(1)} | ${Math.min(...s).toFixed(3)} / ${median(s).toFixed(3)} | ${median(cpu.embed.get(algo.name)!).toFixed(0)} | ${median(cpu.detect.get(algo.name)!).toFixed(0)} | ${median(cpu.detectUnmarked.get(algo.name)!).toFixed(0)} | ${falsePositives.get(algo.name) ?? 0}/${unmarked.length} |`,
  );
}
console.log('\n| attack | cairn-sync-v2 TPR | ≥ 99 %? | cairn-dct-keyed-v1 TPR |');
console.log('|---|---|---|---|');
for (const [attackName, row] of table) {
  const v2 = row.get('cairn-sync-v2');
  console.log(
    `| ${attackName} | ${pct(v2)} | ${v2 && v2.hit / v2.n >= 0.99 ? 'pass' : 'FAIL'} | ${pct(row.get('cairn-dct-keyed-v1'))} |`,
  );
}
// Printed relative to the working directory: the output is committed, a machine's absolute path is not.
console.log(`\ncurves: ${relative(process.cwd(), svgPath)}`);
const v2Embed = median(cpu.embed.get('cairn-sync-v2')!);
const v2Detect = median(cpu.detect.get('cairn-sync-v2')!);
console.log(
  `targets: embed ≤ 30 ms/MP ${v2Embed <= 30 ? 'pass' : 'FAIL'} (${v2Embed.toFixed(0)}), detect ≤ 20 ms/MP ${v2Detect <= 20 ? 'pass' : 'FAIL'} (${v2Detect.toFixed(0)})`,
);
for (const [attackName, row] of table) {
  const v2 = row.get('cairn-sync-v2')!;
  console.log(`ratio tpr.${attackName.replace(/[^A-Za-z0-9.%×°+−-]+/g, '_')} ${(v2.hit / v2.n).toFixed(3)}`);
}
// The content check of cairn-sync-v2 (content-registration.ts): the photos after every attack against their own
// map, and the same tile on other pictures against the victims' maps.
const content = await contentCheck();
console.log('\ncontent check (cairn-sync-v2, 1 MP photos, one key):');
for (const g of content.genuine)
  console.log(`  ${g.attack}: consistent ${g.consistent}/${g.read} read, min r ${g.minCorrelation.toFixed(3)}`);
console.log(
  `  transplanted tile: ${content.transplants.passed}/${content.transplants.read} read marks passed, max r ${content.transplants.maxCorrelation.toFixed(3)}`,
);
const genuineRead = content.genuine.reduce((n, g) => n + g.read, 0);
const genuinePassed = content.genuine.reduce((n, g) => n + g.consistent, 0);
console.log(`ratio content-check-genuine-accepted ${(genuinePassed / Math.max(1, genuineRead)).toFixed(3)}`);
console.log(
  `ratio content-check-transplant-accepted ${(content.transplants.passed / Math.max(1, content.transplants.read)).toFixed(3)}`,
);
console.log(`ratio embed-ms-per-mp-vs-target ${(v2Embed / 30).toFixed(3)}`);
console.log(`ratio detect-ms-per-mp-vs-target ${(v2Detect / 20).toFixed(3)}`);
console.log(`ratio false-positives ${((falsePositives.get('cairn-sync-v2') ?? 0) / unmarked.length).toFixed(6)}`);
printLowTexture(await lowTextureBench(keys, lowTextureSeeds), lowTextureSeeds);
