// Load run of sign + verify: the fleet as real processes (one per service, as deployed), a
// ramp to find the concurrency this machine sustains best with no 5xx, then 60 s at it. Prints throughput,
// p50/p99, the count of 5xx (must be 0) and each service's peak resident memory (the process and its children,
// e.g. the signer's c2pa workers, sampled every 250 ms).
//
//   pnpm bench:load [--seconds 60] [--ramp 1,2,4,8] [--step-seconds 8]
import { parseArgs } from 'node:util';
import sharp from 'sharp';
import type { ServiceName } from '../../packages/config/src/index.js';
import { multipart } from '../../test/support/multipart.js';
import { FLEET_ORDER, onboardTenant, startProcessFleet } from './support/fleet.js';
import { treeRssKb } from './support/proc.js';

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '60' },
    ramp: { type: 'string', default: '1,2,4,8' },
    'step-seconds': { type: 'string', default: '8' },
  },
});
const SECONDS = Number(values.seconds);
const RAMP = String(values.ramp).split(',').map(Number);
const STEP = Number(values['step-seconds']);
const FLEET = FLEET_ORDER;

const fleet = await startProcessFleet({
  overrides: { SIGN_CONCURRENCY_PER_TENANT: '64', LOG_LEVEL: 'warn' },
});
const processes = fleet.processes;
const peak = new Map<ServiceName, number>();
try {
  const sampler = setInterval(() => {
    for (const [name, child] of processes)
      if (child.child.pid) peak.set(name, Math.max(peak.get(name) ?? 0, treeRssKb(child.child.pid)));
  }, 250);

  const base = fleet.base;
  const api_key = await onboardTenant(base, 'Load');
  const auth = { authorization: `Bearer ${api_key}` };

  let counter = 0;
  /** One sign of a distinct 512×384 image, then one verify of the signed file. Answers the two statuses. */
  const iteration = async (latencies: number[], statuses: Map<number, number>) => {
    counter += 1;
    const image = await sharp({
      create: {
        width: 512,
        height: 384,
        channels: 3,
        background: { r: counter % 256, g: (counter >> 8) % 256, b: 77 },
      },
    })
      .jpeg()
      .toBuffer();
    const count = (s: number) => statuses.set(s, (statuses.get(s) ?? 0) + 1);
    let started = performance.now();
    const signed = await fetch(`${base}/v1/sign`, {
      method: 'POST',
      headers: { ...auth, 'idempotency-key': crypto.randomUUID() },
      body: multipart({ recipe: 'image-genai-v1' }, { field: 'asset', bytes: image, name: 'a.jpg' }),
    });
    latencies.push(performance.now() - started);
    count(signed.status);
    if (signed.status !== 200) return void (await signed.arrayBuffer());
    const { asset_id } = (await signed.json()) as { asset_id: string };
    const bytes = Buffer.from(
      await (await fetch(`${base}/v1/assets/${asset_id}/content`, { headers: auth })).arrayBuffer(),
    );
    started = performance.now();
    const verified = await fetch(`${base}/v1/verify`, {
      method: 'POST',
      headers: auth,
      body: multipart({}, { field: 'file', bytes, name: 'a.jpg' }),
    });
    await verified.arrayBuffer();
    latencies.push(performance.now() - started);
    count(verified.status);
  };

  const run = async (concurrency: number, seconds: number) => {
    const latencies: number[] = [];
    const statuses = new Map<number, number>();
    const deadline = performance.now() + seconds * 1000;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        while (performance.now() < deadline)
          await iteration(latencies, statuses).catch(() => statuses.set(0, (statuses.get(0) ?? 0) + 1));
      }),
    );
    const wall = (performance.now() - started) / 1000;
    latencies.sort((a, b) => a - b);
    const q = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))] ?? NaN;
    const fivexx = [...statuses].filter(([s]) => s >= 500 || s === 0).reduce((n, [, c]) => n + c, 0);
    return {
      concurrency,
      requests: latencies.length,
      rps: latencies.length / wall,
      p50: q(0.5),
      p99: q(0.99),
      fivexx,
      statuses,
    };
  };

  console.log(
    `load benchmark: sign + verify of 512×384 JPEGs through the gateway, fleet as ${FLEET.length} processes, Node ${process.version}`,
  );
  let best = { concurrency: RAMP[0]!, rps: 0 };
  for (const c of RAMP) {
    const r = await run(c, STEP);
    console.log(
      `  ramp c=${c}: ${r.rps.toFixed(1)} req/s, p50 ${r.p50.toFixed(0)} ms, p99 ${r.p99.toFixed(0)} ms, 5xx ${r.fivexx}, statuses ${JSON.stringify(Object.fromEntries(r.statuses))}`,
    );
    if (r.fivexx === 0 && r.rps > best.rps * 1.05) best = { concurrency: c, rps: r.rps };
  }
  for (const name of FLEET) peak.set(name, 0);
  const r = await run(best.concurrency, SECONDS);
  clearInterval(sampler);
  console.log(
    `  run c=${r.concurrency} for ${SECONDS} s: ${r.requests} requests (${(r.requests / 2) | 0} sign+verify pairs), ${r.rps.toFixed(1)} req/s, p50 ${r.p50.toFixed(0)} ms, p99 ${r.p99.toFixed(0)} ms, statuses ${JSON.stringify(Object.fromEntries(r.statuses))}`,
  );
  console.log('  peak resident memory during the run (process + children):');
  for (const name of FLEET) console.log(`    ${name.padEnd(12)} ${((peak.get(name) ?? 0) / 1024).toFixed(0)} MiB`);
  console.log(`ratio 5xx ${r.fivexx}`);
  console.log(`ratio throughput_rps ${r.rps.toFixed(2)}`);
  console.log(`ratio p99_ms ${r.p99.toFixed(0)}`);
  if (r.fivexx > 0) process.exitCode = 1;
} finally {
  await fleet.stop();
}
