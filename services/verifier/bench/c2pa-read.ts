// C2PA read time per file of the c2pa-rs corpus (../shared/fixtures/c2pa-rs), hostile files included, through the
// verifier's child-process reader pool (pool of 2, after warm-up). Moved here from the unit suite, which asserts
// what each read answers, not how long it took.
//
//   pnpm bench:c2pa-read [--rounds 5]
//
// Ends with one `ratio c2pa-read.<file> <p50 / baseline p50>` line per file. The baseline, measured in the same
// run, is the read of no_manifest.jpg: a round trip to a child that finds nothing, so a ratio is what the file's
// own parsing and validation cost over the pool's fixed overhead.
import { readdir, readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { createManifestReader } from '../src/adapters/c2pa/index.js';
import { SHARED_DIR } from '../../../packages/testing/src/shared.js';

const CORPUS = `${SHARED_DIR}/fixtures/c2pa-rs/`;
const BASELINE = 'no_manifest.jpg';
const MIME: Record<string, string> = {
  jpg: 'image/jpeg',
  png: 'image/png',
  mp4: 'video/mp4',
  wav: 'audio/wav',
  webp: 'image/webp',
};
const { values } = parseArgs({ options: { rounds: { type: 'string', default: '5' } } });
const rounds = Number(values.rounds);

const files = (await readdir(CORPUS)).filter((f) => MIME[f.split('.').pop() ?? ''] !== undefined).sort();
const anchors = await readFile(`${CORPUS}test-trust-anchors.pem`, 'utf8');
const reader = createManifestReader({ size: 2, timeoutMs: 10_000 });
const p50 = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

try {
  await reader.ready();
  const results = new Map<string, { times: number[]; kind: string }>();
  for (const file of files) {
    const asset = await readFile(`${CORPUS}${file}`);
    const mimeType = MIME[file.split('.').pop() ?? ''] as string;
    const read = () => reader.readManifest({ asset, mimeType, trustAnchorsPem: [anchors], allowRemoteFetch: false });
    await read(); // warm-up
    const times: number[] = [];
    let kind = '';
    for (let i = 0; i < rounds; i++) {
      const t0 = performance.now();
      kind = (await read()).kind;
      times.push(performance.now() - t0);
    }
    results.set(file, { times, kind });
  }
  const baseline = p50(results.get(BASELINE)?.times ?? []);
  console.log(`C2PA read through the reader pool (2 children), ${rounds} rounds each after a warm-up (ms)\n`);
  console.log(`  ${'file'.padEnd(26)} ${'p50'.padStart(8)} ${'max'.padStart(8)}  answer`);
  for (const [file, { times, kind }] of results)
    console.log(
      `  ${file.padEnd(26)} ${p50(times).toFixed(1).padStart(8)} ${Math.max(...times)
        .toFixed(1)
        .padStart(8)}  ${kind}`,
    );
  console.log(`\nbaseline: ${BASELINE} p50 ${baseline.toFixed(1)} ms`);
  for (const [file, { times }] of results) console.log(`ratio c2pa-read.${file} ${(p50(times) / baseline).toFixed(2)}`);
} finally {
  await reader.close();
}
