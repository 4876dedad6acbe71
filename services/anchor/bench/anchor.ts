// Anchoring throughput and cost on a local hardhat chain: for each batch size, N manifest digests are enqueued
// over gRPC (concurrency 50) into one batch (ANCHOR_BATCH_MAX = N), which closes by size, gets its Merkle root,
// and is written in one self-transaction; timed from the first Enqueue to `anchored`. Gas is the receipt's.
// The 100,000 row (unless --full) is computed, not enqueued: the tree of 100,000 digests is built and timed
// with the same code, and its root sent in one real transaction (the cost of a root does not depend on the
// batch size); its enqueue time is extrapolated from the measured 1,000-row Enqueue rate.
//
//   pnpm bench:anchor [--sizes 10,1000,100000] [--full]
import { createHash } from 'node:crypto';
import { parseArgs } from 'node:util';
import { createPublicClient, http, type Hex } from 'viem';
import { newId } from '@cairn/ids';
import { anchorV1, commonV1 } from '@cairn/proto';
import { createClient } from '@cairn/rpc';
import { startService, type RunningService } from '@cairn/runtime';
import { createSandbox, freePort, startHardhat } from '@cairn/testing';
import { DEV_PRIVATE_KEY } from '../src/config.js';
import { createChainWriter } from '../src/adapters/chain.js';
import { leafHash, merkleRoot, toHex } from '@cairn/merkle';
import { anchorService } from '../src/service.js';

const { values } = parseArgs({
  args: process.argv.slice(2).filter((a) => a !== '--'),
  options: { sizes: { type: 'string', default: '10,1000,100000' }, full: { type: 'boolean', default: false } },
});
const SIZES = values.sizes.split(',').map(Number);
const CONCURRENCY = 50;
const TENANTS = Array.from({ length: 5 }, () => newId('tenant'));

const chain = await startHardhat(await freePort());
const sandbox = await createSandbox({ LOG_LEVEL: 'warn', DATABASE_POOL_MAX: '20' });
const reader = createPublicClient({ transport: http(chain.url) });
const digest = (i: number) => createHash('sha256').update(`bench ${i} ${Math.random()}`).digest('hex');
const until = async <T>(check: () => Promise<T | undefined>): Promise<T> => {
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    await new Promise((r) => setTimeout(r, 20));
  }
};

interface Row {
  size: number;
  mode: 'measured' | 'computed';
  enqueueMs: number;
  treeMs: number;
  endToEndMs: number;
  gas: number;
}
const rows: Row[] = [];
let enqueuePerMs = 0;

try {
  for (const size of SIZES) {
    if (size > 10_000 && !values.full) {
      const leaves = Array.from({ length: size }, (_, i) => leafHash(Buffer.from(digest(i), 'hex')));
      const t0 = performance.now();
      const root = merkleRoot(leaves);
      const treeMs = performance.now() - t0;
      const writer = createChainWriter(chain.url, DEV_PRIVATE_KEY);
      const { pending } = await writer.nonces();
      const signed = await writer.sign(toHex(root), pending);
      await writer.broadcast(signed.raw);
      const receipt = await reader.waitForTransactionReceipt({ hash: signed.hash });
      const enqueueMs = enqueuePerMs > 0 ? size / enqueuePerMs : Number.NaN;
      rows.push({
        size,
        mode: 'computed',
        enqueueMs,
        treeMs,
        endToEndMs: enqueueMs + treeMs,
        gas: Number(receipt.gasUsed),
      });
      continue;
    }
    const service: RunningService = await startService(
      anchorService({
        ...sandbox.env,
        ANCHOR_RPC_URL: chain.url,
        ANCHOR_BATCH_MAX: String(size),
        ANCHOR_BATCH_MAX_AGE_MS: '3600000',
        ANCHOR_POLL_MS: '20',
      }),
    );
    const anchor = createClient(anchorV1.AnchorService, `127.0.0.1:${service.grpcPort}`);
    try {
      let next = 0;
      let batchId = '';
      const started = performance.now();
      await Promise.all(
        Array.from({ length: Math.min(CONCURRENCY, size) }, async () => {
          while (next < size) {
            const i = next++;
            const r = await anchor.enqueue({
              tenantId: TENANTS[i % TENANTS.length]!,
              assetId: newId('asset'),
              manifestId: newId('manifest'),
              manifestDigest: digest(i),
            });
            batchId = r.batchId;
          }
        }),
      );
      const enqueueMs = performance.now() - started;
      if (size >= 1000) enqueuePerMs = size / enqueueMs;
      const batch = await until(async () => {
        const { batch: b } = await anchor.getBatch({ batchId });
        return b?.status === commonV1.AnchorBatchState.ANCHORED ? b : undefined;
      });
      const endToEndMs = performance.now() - started;
      const receipt = await reader.getTransactionReceipt({ hash: batch.txHash as Hex });
      const t0 = performance.now();
      merkleRoot(Array.from({ length: size }, (_, i) => leafHash(Buffer.from(digest(i), 'hex'))));
      rows.push({
        size,
        mode: 'measured',
        enqueueMs,
        treeMs: performance.now() - t0,
        endToEndMs,
        gas: Number(receipt.gasUsed),
      });
    } finally {
      anchor.close();
      await service.stop();
    }
  }
} finally {
  await sandbox.dispose();
  await chain.stop();
}

const f = (n: number, d = 0) =>
  Number.isFinite(n) ? n.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d }) : 'n/a';
console.log('\nanchor benchmark (hardhat 2 local chain, one batch per row, Enqueue concurrency 50)\n');
console.log(
  '| batch size | mode | enqueue (ms) | tree build (ms) | enqueue→anchored (ms) | manifests/s | gas per batch | gas per manifest |',
);
console.log('|---:|---|---:|---:|---:|---:|---:|---:|');
for (const r of rows) {
  console.log(
    `| ${f(r.size)} | ${r.mode} | ${f(r.enqueueMs)} | ${f(r.treeMs, 1)} | ${f(r.endToEndMs)} | ${f((r.size / r.endToEndMs) * 1000)} | ${f(r.gas)} | ${f(r.gas / r.size, 2)} |`,
  );
}
process.exit(0);
