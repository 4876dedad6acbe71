// Sign and verify N 1-megapixel photo-like JPEGs through the gateway at concurrency 1 and 8, and compare the
// gateway's sign latency with one bare in-process c2pa-node sign (default settings, i.e. c2pa-rs's own
// thumbnail) of the same images, measured in this run on this machine.
//
//   pnpm bench:sign-verify [--n 24] [--concurrency 1,8]
import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import sharp from 'sharp';
import { Builder } from '@contentauth/c2pa-node';
import { localSignerFor, makeTestCredential, collectGarbage } from '../../services/signer/test/c2pa-fixtures.js';
import { multipart, onboard, startStack } from '../../test/support/stack.js';
import { SHARED_DIR } from '../../packages/testing/src/shared.js';

const { values } = parseArgs({
  options: { n: { type: 'string', default: '24' }, concurrency: { type: 'string', default: '1,8' } },
});
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

async function runPool<T>(
  items: T[],
  concurrency: number,
  task: (item: T) => Promise<number>,
): Promise<{ latencies: number[]; wallMs: number }> {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < items.length) {
        const item = items[next++] as T;
        latencies.push(await task(item));
      }
    }),
  );
  return { latencies: latencies.sort((a, b) => a - b), wallMs: performance.now() - started };
}

function report(label: string, result: { latencies: number[]; wallMs: number }): number {
  const p50 = quantile(result.latencies, 0.5);
  console.log(
    `  ${label.padEnd(26)} p50 ${ms(p50).padStart(10)}   p95 ${ms(quantile(result.latencies, 0.95)).padStart(10)}   ${((result.latencies.length / result.wallMs) * 1000).toFixed(1).padStart(6)} /s`,
  );
  return p50;
}

const images = await photos(N);
console.log(
  `sign-verify benchmark: ${N} JPEGs of 1152×864 (${(images.reduce((s, b) => s + b.length, 0) / N / 1024).toFixed(0)} KiB average), Node ${process.version}`,
);

// Baseline: bare c2pa-node, default settings, same images.
const credential = await makeTestCredential();
const signer = localSignerFor(credential);
const baseline = await runPool(images, 1, async (image) => {
  const started = performance.now();
  const builder = Builder.withJson({
    claim_generator_info: [{ name: 'bench', version: '1' }],
    assertions: [],
  });
  builder.sign(signer, { buffer: image, mimeType: 'image/jpeg' }, { buffer: null });
  return performance.now() - started;
});

const stack = await startStack(['watermark', 'signer', 'verifier', 'gateway'], {
  LOG_LEVEL: 'warn',
  PUBLIC_VERIFY_PER_MINUTE: '100000',
});
try {
  const tenant = await onboard(stack, 'growth');
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
  const signedUrls: string[] = [];
  // Warm-up: first requests pay for connection set-up and JIT.
  for (const image of images.slice(0, 3)) await sign(image);
  const downloaded = await Promise.all(
    images
      .slice(0, 1)
      .map(async () =>
        Buffer.from(
          await (await fetch(signedUrls[0]!, { headers: { authorization: `Bearer ${tenant.api_key}` } })).arrayBuffer(),
        ),
      ),
  );

  // Per-stage time inside the signer (its cairn_sign_stage_seconds histogram), before and after a run.
  const stages = async () => {
    const metric = stack.services.get('signer')!.context.metrics.registry.getSingleMetric('cairn_sign_stage_seconds');
    const values = metric ? (await metric.get()).values : [];
    const totals = new Map<string, { sum: number; count: number }>();
    for (const v of values) {
      const stage = String(v.labels.stage);
      const entry = totals.get(stage) ?? { sum: 0, count: 0 };
      // prom-client names a histogram's series in metricName (untyped in its declarations).
      const series = (v as { metricName?: string }).metricName ?? '';
      if (series.endsWith('_sum')) entry.sum = v.value;
      if (series.endsWith('_count')) entry.count = v.value;
      totals.set(stage, entry);
    }
    return totals;
  };

  console.log('\nbare c2pa-node sign (baseline, default settings, in-process)');
  const baselineP50 = report('concurrency 1', baseline);
  const signP50: Record<number, number> = {};
  console.log('\nPOST /v1/sign through the gateway (watermark + thumbnail + C2PA + storage + events, over gRPC)');
  for (const level of LEVELS) {
    const before = await stages();
    signP50[level] = report(`concurrency ${level}`, await runPool(images, level, sign));
    if (level === 1) {
      const after = await stages();
      const parts = [...after].map(([stage, a]) => {
        const b = before.get(stage) ?? { sum: 0, count: 0 };
        return `${stage} ${(((a.sum - b.sum) / Math.max(1, a.count - b.count)) * 1000).toFixed(1)}`;
      });
      console.log(`    inside the signer, mean ms per sign: ${parts.join(', ')}`);
    }
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
  const toVerify = Array.from({ length: N }, () => downloaded[0]!);
  console.log('\nPOST /v1/verify through the gateway (C2PA in an isolated reader + watermark + OCSP)');
  for (const level of LEVELS) report(`concurrency ${level}`, await runPool(toVerify, level, verify));
  console.log(
    `\nratio gateway sign p50 / bare c2pa-node sign p50 (concurrency 1): ${(signP50[1] ?? NaN) / baselineP50 > 0 ? ((signP50[1] ?? NaN) / baselineP50).toFixed(2) : 'n/a'}  (target ≤ 1.00)`,
  );
} finally {
  await stack.stop();
  collectGarbage();
}
