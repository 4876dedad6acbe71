// How long POST /v1/verify takes for each file of the c2pa-rs corpus (../shared/fixtures/c2pa-rs), the
// hostile ones included, after one warm-up request; and whether the verifier is still up afterwards. The fleet runs
// as separate processes (tools/bench/support/fleet.ts): the built bundles (node tools/dev/build.mjs first), or the
// sources through tsx with --from-source.
// EXPECTED.md asks for every file within a second on this machine.
//
//   pnpm bench:c2pa-corpus [--rounds 5] [--from-source]
import { readdir, readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { multipart } from '../../test/support/multipart.js';
import { SHARED_DIR } from '../../packages/testing/src/shared.js';
import { startProcessFleet } from './support/fleet.js';

const CORPUS = `${SHARED_DIR}/fixtures/c2pa-rs`;
const { values } = parseArgs({
  options: { rounds: { type: 'string', default: '5' }, 'from-source': { type: 'boolean', default: false } },
});
const rounds = Number(values.rounds);
const files = (await readdir(CORPUS)).filter((f) => !f.endsWith('.md') && !f.endsWith('.pem')).sort();

const fleet = await startProcessFleet({
  entry: values['from-source'] ? 'source' : 'bundle',
  overrides: { LOG_LEVEL: 'warn', PUBLIC_VERIFY_PER_MINUTE: '100000' },
});
try {
  const verify = async (file: string) => {
    const bytes = await readFile(`${CORPUS}/${file}`);
    const started = performance.now();
    const res = await fetch(`${fleet.base}/v1/verify`, {
      method: 'POST',
      body: multipart({}, { field: 'file', bytes, name: file }),
    });
    const body = (await res.json()) as { status?: string; code?: string };
    return { ms: performance.now() - started, answer: `${res.status} ${body.status ?? body.code}` };
  };
  await verify('no_manifest.jpg');
  console.log(`c2pa-rs corpus through POST /v1/verify, ${rounds} rounds each (ms)\n`);
  console.log(`  ${'file'.padEnd(24)} ${'p50'.padStart(8)} ${'max'.padStart(8)}  answer`);
  let worst = 0;
  for (const file of files) {
    const times: number[] = [];
    let answer = '';
    for (let i = 0; i < rounds; i++) ({ ms: times[i], answer } = await verify(file));
    times.sort((a, b) => a - b);
    worst = Math.max(worst, times.at(-1) ?? 0);
    console.log(
      `  ${file.padEnd(24)} ${(times[Math.floor(times.length / 2)] ?? 0).toFixed(1).padStart(8)} ${(times.at(-1) ?? 0).toFixed(1).padStart(8)}  ${answer}`,
    );
  }
  const ready = await fetch(`http://127.0.0.1:${fleet.ports.get('verifier')!.ops}/readyz`);
  console.log(`\nslowest answer ${worst.toFixed(1)} ms (goal < 1000 ms); verifier /readyz afterwards: ${ready.status}`);
} finally {
  await fleet.stop();
}
