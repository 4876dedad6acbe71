// C2PA sign time on a 1 MP JPEG: with Cairn's supplied thumbnail (what the signer does) against c2pa-rs making its
// own (decode + resize inside c2pa-rs), both through the same c2pa-node call with a callback signer, so only the
// thumbnail differs. Moved here from the unit suite, which asserts behaviour, not time.
//
//   pnpm bench:c2pa-sign [--rounds 7]
//
// Ends with `ratio c2pa-sign.supplied-thumbnail <supplied p50 / c2pa-rs default p50>` (baseline measured in the
// same run; below 1 means the supplied thumbnail is cheaper).
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import sharp from 'sharp';
import { buildAndSign, buildManifestPlan, newBuilder, type BuildAndSignInput } from '../src/adapters/c2pa/index.js';
import { callbackSignerFor, makeTestCredential } from '../test/c2pa-fixtures.js';
import { SHARED_DIR } from '../../../packages/testing/src/shared.js';

const PHOTO = `${SHARED_DIR}/fixtures/photos/astronaut.png`;
const { values } = parseArgs({ options: { rounds: { type: 'string', default: '7' } } });
const rounds = Number(values.rounds);

const png = readFileSync(PHOTO);
const big = await sharp(png).resize(1024, 1024).jpeg({ quality: 90 }).toBuffer();
const thumb = await sharp(png).resize(256, 256).jpeg({ quality: 75 }).toBuffer();
const credential = await makeTestCredential();
const signer = callbackSignerFor(credential);
const input: BuildAndSignInput = {
  asset: big,
  mimeType: 'image/jpeg',
  signer,
  claimGenerator: { name: 'cairn', version: '0.1.0' },
  title: 'astronaut',
  digitalSourceType: 'http://cv.iptc.org/newscodes/digitalsourcetype/trainedAlgorithmicMedia',
  metadata: { generator: 'bench' },
};
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

async function time(run: () => Promise<unknown>): Promise<number[]> {
  await run(); // warm-up
  const out: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const t0 = performance.now();
    await run();
    out.push(performance.now() - t0);
  }
  return out;
}

const supplied = await time(() => buildAndSign({ ...input, thumbnail: { bytes: thumb, mimeType: 'image/jpeg' } }));
const { definition } = buildManifestPlan(input);
const defaults = await time(async () => {
  const builder = newBuilder(definition, '{}');
  await builder.signAsync(signer, { buffer: big, mimeType: 'image/jpeg' }, { buffer: null });
});

console.log(
  `C2PA sign, 1024x1024 JPEG (${(big.length / 1024).toFixed(0)} KiB), median of ${rounds} after one warm-up:`,
);
console.log(`  supplied thumbnail         ${median(supplied).toFixed(1)} ms`);
console.log(`  c2pa-rs default thumbnail  ${median(defaults).toFixed(1)} ms`);
console.log(`ratio c2pa-sign.supplied-thumbnail ${(median(supplied) / median(defaults)).toFixed(3)}`);
// c2pa-node's callback signer keeps a native handle on the event loop after its last use, so the bench would never
// end on its own.
process.exit(0);
