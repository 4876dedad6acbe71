// Reserve + commit throughput of the billing service over gRPC at a given concurrency: each operation is one
// Reserve followed by its Commit, the way the gateway meters a sign. Tenants are spread over a few ids
// (one hot counter row per tenant and meter is the contention point being measured).
//
//   pnpm bench:billing [--ops 5000] [--concurrency 50] [--tenants 1]
import { parseArgs } from 'node:util';
import { newId } from '@cairn/ids';
import { billingV1 } from '@cairn/proto';
import { createClient } from '@cairn/rpc';
import { startService } from '@cairn/runtime';
import { createSandbox } from '@cairn/testing';
import { billingService } from '../src/service.js';

// `pnpm bench:billing -- --tenants 10` passes the `--` through: drop it.
const { values } = parseArgs({
  args: process.argv.slice(2).filter((a) => a !== '--'),
  options: {
    ops: { type: 'string', default: '5000' },
    concurrency: { type: 'string', default: '50' },
    tenants: { type: 'string', default: '1' },
  },
});
const OPS = Number(values.ops);
const CONCURRENCY = Number(values.concurrency);
const TENANTS = Array.from({ length: Number(values.tenants) }, () => newId('tenant'));

const sandbox = await createSandbox({
  DATABASE_POOL_MAX: String(Math.max(10, Math.min(CONCURRENCY, 50))),
  BILLING_SWEEP_INTERVAL_MS: '0',
  LOG_LEVEL: 'warn',
});
const service = await startService(billingService(sandbox.env));
const billing = createClient(billingV1.BillingService, `127.0.0.1:${service.grpcPort}`);
try {
  for (const tenantId of TENANTS) await billing.setQuota({ tenantId, meter: 'image_sign', quota: BigInt(OPS * 2) });
  // Warm-up: connections, prepared paths.
  await Promise.all(
    TENANTS.map(async (tenantId) =>
      billing.commit({
        tenantId,
        reservationId: (await billing.reserve({ tenantId, meter: 'image_sign', plan: 'developer' })).reservationId,
      }),
    ),
  );

  let next = 0;
  const latencies: number[] = [];
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < OPS) {
        const i = next++;
        const tenantId = TENANTS[i % TENANTS.length]!;
        const t0 = process.hrtime.bigint();
        const { reservationId } = await billing.reserve({ tenantId, meter: 'image_sign', plan: 'developer' });
        await billing.commit({ tenantId, reservationId });
        latencies.push(Number(process.hrtime.bigint() - t0) / 1e6);
      }
    }),
  );
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  latencies.sort((a, b) => a - b);
  const q = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))]!.toFixed(1);
  const usage = await billing.getUsage({ tenantId: TENANTS[0]!, plan: 'developer' });
  console.log(`billing reserve+commit: ${OPS} ops, concurrency ${CONCURRENCY}, ${TENANTS.length} tenant(s)`);
  console.log(
    `  throughput ${(OPS / seconds).toFixed(0)} ops/s (${seconds.toFixed(2)} s); latency p50 ${q(0.5)} ms, p95 ${q(0.95)} ms, p99 ${q(0.99)} ms`,
  );
  console.log(`  tenant 1 image_sign used=${usage.meters.find((m) => m.meter === 'image_sign')?.used ?? 0n}`);
} finally {
  billing.close();
  await service.stop();
  await sandbox.dispose();
}
