/**
 * Soft-binding lookup benchmark: fills softbinding.fingerprints with N synthetic 256-bit hashes (bulk insert in
 * SQL) plus the real photos' indexed hashes, vacuums it, loads it into the service's in-memory index (as at
 * start), times ingest through the service's own path, measures recall of transformed real photos at the lookup
 * radius, then times lookups side by side in rounds: in-memory multi-index (the service's path), Postgres
 * multi-index, sequential scan. Wall-clock p50 and the process's CPU per in-memory lookup (user+system; Postgres's
 * own CPU is not in it). The last lines are `ratio <name> <value>`.
 *   pnpm bench:lookup [--rows 1000000] [--queries 200] [--scans 10]
 */
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import { sql } from 'drizzle-orm';
import { createDb, createPool, migrateService, withTenant } from '../../../packages/db/src/index.js';
import { createSandbox } from '@cairn/testing';
import { FingerprintIndex } from '../src/store/fingerprints.js';
import { PDQ_ALG } from '../src/domain/pdq.js';
import { hashImageBytes, pdqFingerprinter } from '../src/adapters/image-hash.js';
import { LOOKUP_RADIUS } from '../src/domain/threshold.js';
import { indexHashes } from '../src/adapters/image-variants.js';
import { migrationsFolder } from '../src/service.js';
import { loadPhotos, TRANSFORMS } from '../test/support/variants.js';

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '1000000' },
    queries: { type: 'string', default: '200' },
    scans: { type: 'string', default: '10' },
  },
});
const ROWS = Number(values.rows);
/** The service-path ingest sample: assets of as many hashes as an image is indexed with. */
const INGEST_ASSETS = 200;
const INGEST_VARIANTS = 12;
const TENANT = 't_bench';
const sandbox = await createSandbox({ LOG_LEVEL: 'warn' });
const pool = createPool(String(sandbox.env.DATABASE_URL), 4);
try {
  await migrateService(pool, 'softbinding', migrationsFolder);
  const db = createDb(pool);
  const index = new FingerprintIndex(db, { maxSlots: 4_000_000, maxSlotsPerTenant: 4_000_000 });

  const t0 = performance.now();
  const chunkExprs = Array.from({ length: 16 }, (_, i) => `substring(h from ${i * 16 + 1} for 16)::int`).join(', ');
  for (let start = 0; start < ROWS; start += 100_000) {
    const end = Math.min(ROWS, start + 100_000);
    await withTenant(db, TENANT, (tx) =>
      tx.execute(
        sql.raw(`insert into softbinding.fingerprints (tenant_id, asset_id, manifest_id, manifest_uri, verifier_url, alg, variant, hash, quality, ${Array.from({ length: 16 }, (_, i) => `c${i}`).join(', ')})
        select '${TENANT}', 'a_syn_' || i, 'm_syn_' || i, 'https://bench/v1/manifests/m_' || i, 'https://bench/v/a_' || i, '${PDQ_ALG}', 'full', h, 100, ${chunkExprs}
        from (select i, ('x' || md5(i::text || 'x') || md5(i::text || 'y'))::bit(256) as h from generate_series(${start}, ${end - 1}) i) s`),
      ),
    );
  }
  const fillSeconds = (performance.now() - t0) / 1000;
  // As a table in service would be: vacuumed and analysed (else the autovacuum that a million fresh rows set off
  // runs through the measurements below and times itself, not the lookups).
  await pool.query('vacuum analyze softbinding.fingerprints');

  const photos = await loadPhotos();
  await withTenant(db, TENANT, async (tx) => {
    for (const p of photos) {
      const hashes = await indexHashes(pdqFingerprinter, p.bytes);
      await index.add(
        tx,
        hashes.map((h) => ({
          tenantId: TENANT,
          assetId: `a_real_${p.name}`,
          manifestId: `m_${p.name}`,
          manifestUri: `https://bench/v1/manifests/m_${p.name}`,
          verifierUrl: `https://bench/v/${p.name}`,
          alg: PDQ_ALG,
          variant: h.variant,
          bits: h.bits,
          quality: h.quality,
        })),
      );
    }
  });

  const heapBefore = process.memoryUsage().heapUsed + process.memoryUsage().arrayBuffers;
  const tLoad = performance.now();
  await index.load();
  const loadSeconds = (performance.now() - tLoad) / 1000;
  const heldBytes = process.memoryUsage().heapUsed + process.memoryUsage().arrayBuffers - heapBefore;

  // Ingest as the indexing consumer does it: one transaction per asset, its hashes in one insert, held at once.
  const tIngest = performance.now();
  for (let a = 0; a < INGEST_ASSETS; a++) {
    await withTenant(db, TENANT, (tx) =>
      index.add(
        tx,
        Array.from({ length: INGEST_VARIANTS }, (_, v) => ({
          tenantId: TENANT,
          assetId: `a_ingest_${a}`,
          manifestId: `m_ingest_${a}`,
          manifestUri: `https://bench/v1/manifests/m_ingest_${a}`,
          verifierUrl: `https://bench/v/a_ingest_${a}`,
          alg: PDQ_ALG,
          variant: `v${v}`,
          bits: new Uint8Array(randomBytes(32)),
          quality: 100,
        })),
      ),
    );
  }
  const ingestSeconds = (performance.now() - tIngest) / 1000;
  const ingestRows = INGEST_ASSETS * INGEST_VARIANTS;

  // Queries: every real photo under every transform (recall), repeated up to --queries.
  const queries: Array<{ expect: string; transform: string; bits: Uint8Array }> = [];
  for (const p of photos)
    for (const [transform, t] of Object.entries(TRANSFORMS))
      queries.push({ expect: `a_real_${p.name}`, transform, bits: (await hashImageBytes(await t(p.bytes))).bits });
  const pct = (xs: number[], p: number) =>
    [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))]!;
  // Recall first (every transformed photo once), then the timings side by side: rounds of in-memory lookups,
  // Postgres MIH lookups and one sequential scan, so a change of the machine's load falls on all three alike.
  let found = 0;
  for (const q of queries) {
    const matches = await index.search({ tenantId: TENANT }, q.bits, LOOKUP_RADIUS);
    if (matches.some((m) => m.asset_id === q.expect)) found++;
    else console.log(`missed: ${q.expect} ${q.transform}`);
  }
  const total = queries.length;
  const mem: number[] = [];
  const mih: number[] = [];
  const scan: number[] = [];
  const n = Number(values.queries);
  const scans = Number(values.scans);
  let memCpuMicros = 0;
  for (let round = 0, i = 0; round < scans; round++) {
    const upTo = Math.round((n * (round + 1)) / scans);
    for (let j = i; j < upTo; j++) {
      const q = queries[j % queries.length]!;
      const cpu0 = process.cpuUsage();
      const s = performance.now();
      await index.search({ tenantId: TENANT }, q.bits, LOOKUP_RADIUS);
      mem.push(performance.now() - s);
      const cpu = process.cpuUsage(cpu0);
      memCpuMicros += cpu.user + cpu.system;
    }
    for (let j = i; j < upTo; j++) {
      const q = queries[j % queries.length]!;
      const s = performance.now();
      await index.searchPostgres({ tenantId: TENANT }, q.bits, LOOKUP_RADIUS);
      mih.push(performance.now() - s);
    }
    i = upTo;
    const q = queries[round % queries.length]!;
    const s = performance.now();
    await index.scan({ tenantId: TENANT }, q.bits, LOOKUP_RADIUS);
    scan.push(performance.now() - s);
  }
  const memCpuMs = memCpuMicros / 1000 / mem.length;
  let agree = true;
  for (let i = 0; i < Math.min(3, queries.length); i++) {
    const q = queries[i * 7]!;
    const viaScan = await index.scan({ tenantId: TENANT }, q.bits, LOOKUP_RADIUS);
    const viaIndex = await index.search({ tenantId: TENANT }, q.bits, LOOKUP_RADIUS);
    const viaPostgres = await index.searchPostgres({ tenantId: TENANT }, q.bits, LOOKUP_RADIUS);
    agree &&=
      viaScan.length > 0 &&
      JSON.stringify(viaScan) === JSON.stringify(viaIndex) &&
      JSON.stringify(viaScan) === JSON.stringify(viaPostgres);
  }
  const f = (x: number) => x.toFixed(2);
  const real = index.heldRows - ROWS - ingestRows;
  console.log(
    `rows: ${ROWS} synthetic + ${real} real (${photos.length} photos × ${real / photos.length} indexed variants); bulk insert ${fillSeconds.toFixed(1)} s (${Math.round(ROWS / fillSeconds)} rows/s)`,
  );
  console.log(
    `in-memory index load at start: ${index.heldRows} rows in ${loadSeconds.toFixed(1)} s (${Math.round(index.heldRows / loadSeconds)} rows/s), ~${Math.round(heldBytes / 2 ** 20)} MiB`,
  );
  console.log(
    `radius ${LOOKUP_RADIUS}: recall ${found}/${total} = ${(found / total).toFixed(3)} (photos × {${Object.keys(TRANSFORMS).join(', ')}})`,
  );
  console.log(
    `in-memory MIH lookup (${mem.length}): p50 ${f(pct(mem, 50))} ms, p99 ${f(pct(mem, 99))} ms; CPU ${f(memCpuMs)} ms/lookup in this process`,
  );
  console.log(`Postgres MIH lookup (${mih.length}): p50 ${f(pct(mih, 50))} ms, p99 ${f(pct(mih, 99))} ms`);
  console.log(
    `sequential scan (${scan.length}): p50 ${f(pct(scan, 50))} ms, p99 ${f(pct(scan, 99))} ms; same answers (scan, in-memory, Postgres MIH): ${agree}`,
  );
  console.log(
    `ingest through the service's path (FingerprintIndex.add, one transaction per asset of ${INGEST_VARIANTS} hashes): ${ingestRows} rows in ${ingestSeconds.toFixed(1)} s (${Math.round(ingestRows / ingestSeconds)} rows/s)`,
  );
  console.log(`ratio lookup_index_speedup ${(pct(scan, 50) / pct(mem, 50)).toFixed(1)}`);
  console.log(`ratio lookup_postgres_mih_speedup ${(pct(scan, 50) / pct(mih, 50)).toFixed(1)}`);
  console.log(`ratio lookup_recall ${(found / total).toFixed(3)}`);
} finally {
  await pool.end();
  await sandbox.dispose();
}
