// Sign and verify N 1-megapixel photo-like JPEGs through the gateway at concurrency 1 and 8, and compare the
// gateway's sign latency with one bare in-process c2pa-node sign (default settings, i.e. c2pa-rs's own
// thumbnail) of the same images, and its verify latency with one bare c2pa-node read plus one sharp decode of
// the signed file, both measured in this run on this machine. At concurrency 1 it also prints where the time
// goes: the mean milliseconds per request of every span the fleet ends (stages, gRPC hops), read in-process.
//
//   pnpm bench:sign-verify [--n 24] [--concurrency 1,8] [--set KEY=VALUE ...] [--cpu-prof DIR]
//
// --cpu-prof DIR writes a V8 CPU profile of this process's main thread (where the whole fleet's JavaScript runs,
// the watermark workers aside) for each sign row, `DIR/sign-c<level>.cpuprofile`, to rank where a sign's CPU goes.
//
// Ends with `ratio sign-c1 …` (gateway sign p50 ÷ bare sign p50), `ratio verify-c1 …` (gateway verify p50 ÷ bare
// read + decode p50), `ratio sign-c1-quiet-fleet …` (the same as sign-c1, each sign started once the previous one's
// stored verdict is done) and `ratio sign-throughput-c8/c1 …` (signs per second at the highest level ÷ at 1).
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { availableParallelism, loadavg } from 'node:os';
import { Session } from 'node:inspector/promises';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import sharp from 'sharp';
import { Builder, Reader } from '@contentauth/c2pa-node';
import { localSignerFor, makeTestCredential, collectGarbage } from '../../services/signer/test/c2pa-fixtures.js';
import { multipart, onboard, startStack } from '../../test/support/stack.js';
import { freePort, startHardhat } from '@cairn/testing';
import { SHARED_DIR } from '../../packages/testing/src/shared.js';
import { readerSettingsJson } from '../../services/verifier/src/adapters/c2pa/settings.js';
import { onSpanEnd, SpanKind, type EndedSpan } from '../../packages/telemetry/src/index.js';

const { values } = parseArgs({
  options: {
    n: { type: 'string', default: '24' },
    concurrency: { type: 'string', default: '1,8' },
    // KEY=VALUE, repeatable: a setting of the fleet for this run (e.g. --set WATERMARK_WORKERS=1), to compare sizes.
    set: { type: 'string', multiple: true, default: [] },
    'cpu-prof': { type: 'string' },
  },
});
const settings: Record<string, string> = Object.fromEntries(
  (values.set ?? []).map((pair) => {
    const at = pair.indexOf('=');
    if (at < 1) throw new Error(`--set takes KEY=VALUE, got ${pair}`);
    return [pair.slice(0, at), pair.slice(at + 1)];
  }),
);
const N = Number(values.n);
const LEVELS = String(values.concurrency).split(',').map(Number);

const quantile = (sorted: number[], q: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
const ms = (v: number) => `${v.toFixed(1)} ms`;

async function photos(count: number): Promise<Buffer[]> {
  const sources = ['astronaut.png', 'coffee.png', 'chelsea.png'];
  const out: Buffer[] = [];
  for (let i = 0; i < count; i++) {
    const source = await readFile(`${SHARED_DIR}/fixtures/photos/${sources[i % sources.length]}`);
    // 1152×864 ≈ 1 MP; a different tint per image so no two are the same file.
    out.push(
      await sharp(source)
        .resize(1152, 864, { fit: 'cover' })
        .modulate({ brightness: 0.9 + (i % 10) / 50, hue: (i * 17) % 360 })
        .jpeg({ quality: 90 })
        .toBuffer(),
    );
  }
  return out;
}

/** Milliseconds spent so far on baseline work interleaved with the fleet's requests (see withBaseline). */
let baselineMs = 0;

async function runPool<T>(
  items: T[],
  concurrency: number,
  task: (item: T) => Promise<number>,
): Promise<{ latencies: number[]; wallMs: number; cpuMs: number }> {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  const cpuBefore = process.cpuUsage();
  const pausedBefore = baselineMs;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) {
        const item = items[next++] as T;
        latencies.push(await task(item));
      }
    }),
  );
  // Time spent on interleaved baseline work is no time of the fleet's.
  const cpu = process.cpuUsage(cpuBefore);
  return {
    latencies: latencies.sort((a, b) => a - b),
    wallMs: performance.now() - started - (baselineMs - pausedBefore),
    cpuMs: (cpu.user + cpu.system) / 1000,
  };
}

function report(
  label: string,
  result: { latencies: number[]; wallMs: number; cpuMs?: number },
): { p50: number; perSecond: number } {
  const p50 = quantile(result.latencies, 0.5);
  const perSecond = (result.latencies.length / result.wallMs) * 1000;
  // The process's CPU per request (main thread, workers, sharp's threads; not the C2PA children), baselines included.
  const cpu = result.cpuMs === undefined ? '' : `   CPU ${ms(result.cpuMs / result.latencies.length)} per request`;
  console.log(
    `  ${label.padEnd(26)} p50 ${ms(p50).padStart(10)}   p95 ${ms(quantile(result.latencies, 0.95)).padStart(10)}   ${perSecond.toFixed(1).padStart(6)} /s${cpu}`,
  );
  return { p50, perSecond };
}

/**
 * Mean milliseconds per request of each span name the fleet ended while `run` ran (a gRPC call appears twice:
 * → the caller's wait, ⇢ the callee's handling), in order of first start, so parents come before their stages.
 */
async function spanProfile<T>(requests: number, run: () => Promise<T>): Promise<T> {
  const totals = new Map<string, { ms: number; count: number; firstStart: number }>();
  // The fleet shares this process's event loop: how late its callbacks ran (time no span names as its own), and
  // the process's CPU per request (main thread, workers and sharp's threads; not the C2PA children).
  const lag = monitorEventLoopDelay({ resolution: 5 });
  lag.enable();
  const cpuBefore = process.cpuUsage();
  const stop = onSpanEnd((span: EndedSpan) => {
    const name = `${span.kind === SpanKind.CLIENT ? '→ ' : span.kind === SpanKind.SERVER ? '⇢ ' : '  '}${span.name}`;
    const entry = totals.get(name) ?? { ms: 0, count: 0, firstStart: Infinity };
    entry.ms += span.duration[0] * 1000 + span.duration[1] / 1e6;
    entry.count += 1;
    entry.firstStart = Math.min(entry.firstStart, span.startTime[0] * 1e3 + span.startTime[1] / 1e6);
    totals.set(name, entry);
  });
  try {
    return await run();
  } finally {
    stop();
    lag.disable();
    const cpu = process.cpuUsage(cpuBefore);
    const rows = [...totals].sort((a, b) => a[1].firstStart - b[1].firstStart);
    // → a gRPC call as its caller waits for it, ⇢ as its callee handles it. During signs, the verify.* spans are the
    // verifier computing each new asset's stored verdict (on asset.signed), which shares the machine with the signs.
    console.log(`    spans, mean ms per request (calls per request; → gRPC caller, ⇢ callee):`);
    for (const [name, { ms: total, count }] of rows)
      console.log(
        `      ${name.padEnd(56)} ${(total / requests).toFixed(1).padStart(7)}  (${(count / requests).toFixed(1)})`,
      );
    console.log(
      `    event-loop delay mean ${(lag.mean / 1e6).toFixed(1)} ms, p99 ${(lag.percentile(99) / 1e6).toFixed(1)} ms, max ${(lag.max / 1e6).toFixed(1)} ms; process CPU ${((cpu.user + cpu.system) / 1000 / requests).toFixed(1)} ms per request (baselines included)`,
    );
  }
}

/** Runs `run` under the main thread's V8 CPU profiler when --cpu-prof names a directory, writing `<name>.cpuprofile`. */
async function profiled<T>(name: string, run: () => Promise<T>): Promise<T> {
  const dir = values['cpu-prof'];
  if (!dir) return run();
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.start');
  try {
    return await run();
  } finally {
    const { profile } = await session.post('Profiler.stop');
    session.disconnect();
    await mkdir(dir, { recursive: true });
    await writeFile(`${dir}/${name}.cpuprofile`, JSON.stringify(profile));
  }
}

/**
 * Waits until the fleet has been quiet (no span ended) for `quietMs`: each sign leaves work behind (the verifier
 * computes the new asset's stored verdict from asset.signed), and a phase measured on top of the last one's
 * backlog, or a shutdown in the middle of it, would measure or break on that instead.
 */
let lastSpanEnd = performance.now();
// Request work only (stages and gRPC calls), not the fleet's periodic pollers.
const requestSpan = /^(\/cairn\.|sign\.|verify\.|watermark\.|gateway\.)/;
onSpanEnd((span) => {
  if (requestSpan.test(span.name)) lastSpanEnd = performance.now();
});
async function settle(quietMs = 1500, maxMs = 60_000): Promise<void> {
  const started = performance.now();
  while (performance.now() - lastSpanEnd < quietMs && performance.now() - started < maxMs)
    await new Promise((resolve) => setTimeout(resolve, 200));
}

const images = await photos(N);
console.log(
  `sign-verify benchmark: ${N} JPEGs of 1152×864 (${(images.reduce((s, b) => s + b.length, 0) / N / 1024).toFixed(0)} KiB average), Node ${process.version}, ${availableParallelism()} cores, load average ${loadavg()
    .map((l) => l.toFixed(1))
    .join(' ')} at start${
    Object.keys(settings).length
      ? `, ${Object.entries(settings)
          .map(([k, v]) => `${k}=${v}`)
          .join(' ')}`
      : ''
  }`,
);

// Baseline: bare c2pa-node, default settings, same images.
const credential = await makeTestCredential();
const signer = localSignerFor(credential);
const bareSign = (image: Buffer): Buffer => {
  const builder = Builder.withJson({
    claim_generator_info: [{ name: 'bench', version: '1' }],
    assertions: [],
  });
  const dest: { buffer: Buffer | null } = { buffer: null };
  builder.sign(signer, { buffer: image, mimeType: 'image/jpeg' }, dest);
  if (!dest.buffer) throw new Error('bare sign produced nothing');
  return dest.buffer;
};
// Verify baseline: one bare c2pa-node read with the verifier's own reader settings (validation on, trust checked,
// no network; the test credential's root as the anchor) and one sharp decode of the same signed file: the least a
// verify that reads the manifest and the pixels can do.
const trustSettings = readerSettingsJson([credential.caCertPem]);
const bareVerify = async (signed: Buffer): Promise<void> => {
  const reader = await Reader.fromAsset({ buffer: signed, mimeType: 'image/jpeg' }, trustSettings);
  if (!reader) throw new Error('bare read found no manifest');
  reader.json();
  await sharp(signed).raw().toBuffer();
};
// The baselines run interleaved with the gateway's concurrency-1 requests (one bare sign and one bare read before
// each), so both sides of a ratio see the same load even when other work on the machine comes and goes.
const bareSignTimes: number[] = [];
const bareVerifyTimes: number[] = [];
const bareSigned = bareSign(images[0]!);
const timeBare = async (image: Buffer): Promise<void> => {
  const began = performance.now();
  let started = began;
  bareSign(image);
  bareSignTimes.push(performance.now() - started);
  started = performance.now();
  await bareVerify(bareSigned);
  bareVerifyTimes.push(performance.now() - started);
  baselineMs += performance.now() - began;
};
const withBaseline =
  <T>(task: (item: T) => Promise<number>, image: (item: T) => Buffer) =>
  async (item: T): Promise<number> => {
    await timeBare(image(item));
    return task(item);
  };

// The anchor writes to a local hardhat chain (the stand-in for the public chain), as the anchor tests do.
const chain = await startHardhat(await freePort());
const stack = await startStack(['watermark', 'signer', 'verifier', 'anchor', 'gateway'], {
  LOG_LEVEL: 'silent',
  ANCHOR_RPC_URL: chain.url,
  PUBLIC_VERIFY_PER_MINUTE: '100000',
  // The gateway's per-tenant limit on signs in flight, set to the bench's highest concurrency (the check stays on).
  SIGN_CONCURRENCY_PER_TENANT: String(Math.max(...LEVELS)),
  ...settings,
});
try {
  const tenant = await onboard(stack, 'growth');
  const signedUrls: string[] = [];
  const sign = async (image: Buffer) => {
    const started = performance.now();
    const res = await stack.request('/v1/sign', {
      method: 'POST',
      key: tenant.api_key,
      headers: { 'idempotency-key': crypto.randomUUID() },
      body: multipart({ recipe: 'image-genai-v1' }, { field: 'asset', bytes: image, name: 'b.jpg' }),
    });
    if (res.status !== 200) throw new Error(`sign: ${res.status} ${await res.text()}`);
    signedUrls.push(((await res.json()) as { asset_url: string }).asset_url);
    return performance.now() - started;
  };
  // Warm-up: first requests pay for connection set-up and JIT.
  for (const image of images.slice(0, 3)) await sign(image);
  const downloaded = Buffer.from(
    await (await fetch(signedUrls[0]!, { headers: { authorization: `Bearer ${tenant.api_key}` } })).arrayBuffer(),
  );

  const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
  const signAt: Record<number, { p50: number; perSecond: number }> = {};
  console.log('\nPOST /v1/sign through the gateway (watermark + thumbnail + C2PA + storage + events, over gRPC)');
  for (const level of LEVELS) {
    await settle();
    const run = () =>
      profiled(`sign-c${level}`, () =>
        runPool(images, level, level === 1 ? withBaseline(sign, (image) => image) : sign),
      );
    const cpuBefore = process.cpuUsage();
    signAt[level] = report(`concurrency ${level}`, level === 1 ? await spanProfile(N, run) : await run());
    // A sign leaves work behind (its stored verdict, the anchor batch, the soft-binding index): its whole CPU is
    // counted until the fleet is quiet again (a burst's verdicts queue past the burst's end).
    await settle();
    const cpu = process.cpuUsage(cpuBefore);
    console.log(
      `  ${''.padEnd(26)} process CPU ${ms((cpu.user + cpu.system) / 1000 / N)} per sign until the fleet is quiet${level === 1 ? ' (baselines included)' : ''}`,
    );
  }
  // Concurrency 1 again, each sign (and its bare baseline) started only once the fleet is quiet, so the previous
  // sign's stored verdict (a whole verify, from asset.signed) no longer runs beside it: the difference between this
  // row's ratio and sign-c1 is that verdict's share of a sign's latency. p50 only (the waits are not the fleet's).
  const settledBareTimes: number[] = [];
  const settledTimes: number[] = [];
  if (LEVELS.includes(1)) {
    for (const image of images) {
      await settle(1500);
      const started = performance.now();
      bareSign(image);
      settledBareTimes.push(performance.now() - started);
      settledTimes.push(await sign(image));
    }
    console.log(
      `  c1, after the fleet is quiet p50 ${ms(quantile(sorted(settledTimes), 0.5)).padStart(10)}   (bare sign p50 ${ms(quantile(sorted(settledBareTimes), 0.5))})`,
    );
  }
  const verify = async (bytes: Buffer) => {
    const started = performance.now();
    const res = await stack.request('/v1/verify', {
      method: 'POST',
      key: tenant.api_key,
      body: multipart({}, { field: 'file', bytes, name: 'v.jpg' }),
    });
    const body = (await res.json()) as { status: string };
    if (body.status !== 'verified_manifest_and_watermark_match') throw new Error(`verify: ${body.status}`);
    return performance.now() - started;
  };
  const toVerify = Array.from({ length: N }, () => downloaded);
  await verify(downloaded); // warm-up
  const verifyAt: Record<number, { p50: number; perSecond: number }> = {};
  console.log('\nPOST /v1/verify through the gateway (C2PA in an isolated reader + watermark + OCSP + anchor)');
  for (const level of LEVELS) {
    await settle();
    const run = () =>
      runPool(toVerify, level, level === 1 ? withBaseline(verify, () => images[bareSignTimes.length % N]!) : verify);
    verifyAt[level] = report(`concurrency ${level}`, level === 1 ? await spanProfile(N, run) : await run());
  }
  const top = Math.max(...LEVELS);
  console.log('\nbare c2pa-node in this process (baseline, run between the concurrency-1 requests above)');
  const bareSignP50 = quantile(sorted(bareSignTimes), 0.5);
  const bareVerifyP50 = quantile(sorted(bareVerifyTimes), 0.5);
  console.log(`  sign (default settings)    p50 ${ms(bareSignP50).padStart(10)}   (${bareSignTimes.length} signs)`);
  console.log(`  read + one sharp decode    p50 ${ms(bareVerifyP50).padStart(10)}   (${bareVerifyTimes.length} reads)`);
  console.log(
    `\nload average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(' ')} at the end`,
  );
  console.log(`ratio sign-c1 ${((signAt[1]?.p50 ?? NaN) / bareSignP50).toFixed(2)}`);
  if (settledTimes.length)
    console.log(
      `ratio sign-c1-quiet-fleet ${(quantile(sorted(settledTimes), 0.5) / quantile(sorted(settledBareTimes), 0.5)).toFixed(2)}`,
    );
  console.log(`ratio verify-c1 ${((verifyAt[1]?.p50 ?? NaN) / bareVerifyP50).toFixed(2)}`);
  console.log(
    `ratio sign-throughput-c${top}/c1 ${((signAt[top]?.perSecond ?? NaN) / (signAt[1]?.perSecond ?? NaN)).toFixed(2)}`,
  );
} finally {
  await settle();
  await stack.stop();
  await chain.stop();
  collectGarbage();
}
