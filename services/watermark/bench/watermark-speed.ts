// Image watermark speed alone (target: embed ≤ 30 and detect ≤ 20 ms per megapixel, one core): the CPU time of
// cairn-sync-v2's embed, its detect on the marked copy and on the unmarked host, over the four repository photos at
// 1 and 4 MP under fixed keys, with cairn-dct-keyed-v1 timed on the same images in the same run as the baseline.
// "worker embed" is the embed as the service's worker runs it (runImageTask on pixels it owns): the mark, the PSNR
// the answer reports and the content description (a sign pays for that whole step).
// Minutes faster than `pnpm bench:watermark`, whose attack table takes half an hour, so it can be re-run whenever
// the machine is quiet (CPU time still grows with a loaded machine's cache and memory contention: the load average
// is printed).
//
//   pnpm bench:watermark-speed [--keys N] [--seed S]
import { createHash } from 'node:crypto';
import os from 'node:os';
import { parseArgs } from 'node:util';
import sharp from 'sharp';
import type { ImageWatermarkAlgorithm } from '../src/domain/image/algorithm.js';
import { createKeyedImageWatermark } from '../src/domain/image/cairn-dct-keyed-v1.js';
import { SyncTileWatermark } from '../src/domain/image/cairn-sync-v2.js';
import { ImageAlgorithms, runImageTask } from '../src/domain/image-tasks.js';
import type { KeyedAlgorithmName } from '../src/domain/worker-protocol.js';
import { keyedPayloadFor } from '../src/domain/payload.js';
import { decode } from './image/attacks.js';
import { SHARED_DIR } from '../../../packages/testing/src/shared.js';

const { values } = parseArgs({
  options: { keys: { type: 'string', default: '3' }, seed: { type: 'string', default: 'cairn-bench' } },
});
const PHOTOS = ['astronaut.png', 'camera.png', 'chelsea.png', 'coffee.png'];
const PHOTOS_DIR = `${SHARED_DIR}/fixtures/photos/`;
const ALGOS: Array<{ name: KeyedAlgorithmName; make(key: Uint8Array): ImageWatermarkAlgorithm }> = [
  { name: 'cairn-sync-v2', make: (key) => new SyncTileWatermark(key) },
  { name: 'cairn-dct-keyed-v1', make: (key) => createKeyedImageWatermark(key) },
];
const workerAlgorithms = new ImageAlgorithms();

const cpuMs = (t0: NodeJS.CpuUsage): number => {
  const used = process.cpuUsage(t0);
  return (used.user + used.system) / 1000;
};
const median = (xs: number[]): number => {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};

const loads = [os.loadavg()[0] ?? 0];
const timings = new Map(
  ALGOS.map((a) => [
    a.name,
    { embed: [] as number[], task: [] as number[], marked: [] as number[], unmarked: [] as number[] },
  ]),
);
const keys = Array.from({ length: Number(values.keys) }, (_, i) =>
  Uint8Array.from(createHash('sha256').update(`${values.seed}|${i}`).digest()),
);
for (const pixels of [1e6, 4e6]) {
  for (const file of PHOTOS) {
    const meta = await sharp(PHOTOS_DIR + file).metadata();
    const scale = Math.sqrt(pixels / ((meta.width ?? 1) * (meta.height ?? 1)));
    const image = await decode(
      sharp(PHOTOS_DIR + file)
        .removeAlpha()
        .toColourspace('srgb')
        .resize(Math.round((meta.width ?? 1) * scale), Math.round((meta.height ?? 1) * scale), { fit: 'fill' }),
    );
    const megapixels = (image.width * image.height) / 1e6;
    for (const [k, key] of keys.entries()) {
      const payload = keyedPayloadFor(key, `w_speed_${k}`);
      // Interleaved per image, so both algorithms see the same moments of the machine's load.
      for (const algo of ALGOS) {
        const wm = algo.make(key);
        const t = timings.get(algo.name);
        if (!t) continue;
        let t0 = process.cpuUsage();
        const marked = wm.embed(image, payload);
        t.embed.push(cpuMs(t0) / megapixels);
        const owned = { ...image, pixels: image.pixels.slice() };
        const request = { id: 1, op: 'embed', image: owned, payload, key: { kid: `k${k}`, secret: key } } as const;
        t0 = process.cpuUsage();
        runImageTask(workerAlgorithms, { ...request, algorithm: algo.name }, { pixelsOwned: true });
        t.task.push(cpuMs(t0) / megapixels);
        t0 = process.cpuUsage();
        wm.detect(marked);
        t.marked.push(cpuMs(t0) / megapixels);
        t0 = process.cpuUsage();
        wm.detect(image);
        t.unmarked.push(cpuMs(t0) / megapixels);
      }
    }
    loads.push(os.loadavg()[0] ?? 0);
  }
}

console.log(
  `image watermark speed: ${PHOTOS.length} photos × 1 and 4 MP × ${keys.length} keys, CPU ms per megapixel (median), ` +
    `Node ${process.version}, ${os.cpus().length} cores, load average ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}`,
);
console.log('| algorithm | embed | worker embed | detect, marked | detect, unmarked |');
console.log('|---|---|---|---|---|');
for (const [name, t] of timings)
  console.log(
    `| ${name} | ${[t.embed, t.task, t.marked, t.unmarked].map((xs) => median(xs).toFixed(1)).join(' | ')} |`,
  );
const v2 = timings.get('cairn-sync-v2');
const v1 = timings.get('cairn-dct-keyed-v1');
if (v2 && v1) {
  console.log(
    `targets: embed ≤ 30 ${median(v2.embed) <= 30 ? 'pass' : 'FAIL'}, detect ≤ 20 ${median(v2.marked) <= 20 ? 'pass' : 'FAIL'}`,
  );
  console.log(`ratio embed-v2-vs-keyed-v1 ${(median(v2.embed) / median(v1.embed)).toFixed(3)}`);
  console.log(`ratio detect-marked-v2-vs-keyed-v1 ${(median(v2.marked) / median(v1.marked)).toFixed(3)}`);
  console.log(`ratio embed-ms-per-mp-vs-target ${(median(v2.embed) / 30).toFixed(3)}`);
  console.log(`ratio detect-ms-per-mp-vs-target ${(median(v2.marked) / 20).toFixed(3)}`);
}
