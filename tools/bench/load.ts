// Load run of sign + verify (issue #11 item 7): the fleet as real processes (one per service, as deployed), a
// ramp to find the concurrency this machine sustains best with no 5xx, then 60 s at it. Prints throughput,
// p50/p99, the count of 5xx (must be 0) and each service's peak resident memory (the process and its children,
// e.g. the signer's c2pa workers, sampled every 250 ms).
//
//   pnpm bench:load [--seconds 60] [--ramp 1,2,4,8] [--step-seconds 8]
import { readFileSync, readdirSync } from 'node:fs';
import { parseArgs } from 'node:util';
import sharp from 'sharp';
import { databaseRole, grpcAddrVar, SERVICE_NAMES, type ServiceName } from '../../packages/config/src/index.js';
import {
  APP_ROLE,
  createSandbox,
  databaseUrl,
  freePort,
  PG_ADMIN_URL,
  provisionServiceRoles,
  waitFor,
} from '@cairn/testing';
import { spawnService, type ServiceProcess } from '../../test/support/process.js';
import { multipart } from '../../test/support/stack.js';

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
const FLEET: ServiceName[] = [
  // The gateway authenticates, and billing and audit read plans, through the tenant service (issue #12).
  'tenant',
  'watermark',
  'signer',
  'verifier',
  'softbinding',
  'anchor',
  'billing',
  'audit',
  'webhook',
  'gateway',
];

const sandbox = await createSandbox({
  ANCHOR_RPC_URL: 'http://127.0.0.1:1',
  SIGN_CONCURRENCY_PER_TENANT: '64',
  LOG_LEVEL: 'warn',
});
await provisionServiceRoles(
  PG_ADMIN_URL,
  sandbox.databaseName,
  APP_ROLE,
  SERVICE_NAMES.map((name) => ({ schema: name, role: databaseRole(name) })),
);
const httpPort = await freePort();
const env: NodeJS.ProcessEnv = {
  ...sandbox.env,
  HTTP_PORT: String(httpPort),
  PUBLIC_BASE_URL: `http://127.0.0.1:${httpPort}`,
};
const ports = new Map<ServiceName, { grpc: number; ops: number }>();
for (const name of FLEET) ports.set(name, { grpc: await freePort(), ops: await freePort() });
for (const [name, p] of ports) env[grpcAddrVar(name)] = `127.0.0.1:${p.grpc}`;

const processes = new Map<ServiceName, ServiceProcess>();
const peak = new Map<ServiceName, number>();
try {
  for (const name of FLEET) {
    const p = ports.get(name)!;
    const child = spawnService(name, {
      ...env,
      DATABASE_URL: databaseUrl(PG_ADMIN_URL, sandbox.databaseName, databaseRole(name)),
      GRPC_PORT: String(p.grpc),
      OPS_PORT: String(p.ops),
    });
    processes.set(name, child);
    await waitFor(
      `${name} ready:\n${child.output()}`,
      async () => (await fetch(`http://127.0.0.1:${p.ops}/readyz`).catch(() => undefined))?.status === 200, // not listening yet
      120_000,
      250,
    );
  }

  /** Resident kB of a process and all its descendants. */
  const treeRss = (pid: number): number => {
    let total = 0;
    try {
      total = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
      for (const task of readdirSync(`/proc/${pid}/task`)) {
        for (const child of readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').split(' ').filter(Boolean))
          total += treeRss(Number(child));
      }
    } catch {
      // the process (a worker) exited between the listing and the read
    }
    return total;
  };
  const sampler = setInterval(() => {
    for (const [name, child] of processes)
      if (child.child.pid) peak.set(name, Math.max(peak.get(name) ?? 0, treeRss(child.child.pid)));
  }, 250);

  const base = `http://127.0.0.1:${httpPort}`;
  const onboarded = await fetch(`${base}/v1/onboard`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': crypto.randomUUID() },
    body: JSON.stringify({
      email: 'load@example.com',
      tenant_name: 'Load',
      plan: 'growth',
      payment_method_id: 'pm_card_visa',
    }),
  });
  const { api_key } = (await onboarded.json()) as { api_key: string };
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
  for (const child of processes.values()) child.kill();
  await Promise.all([...processes.values()].map((c) => c.exit));
  await sandbox.dispose();
}
