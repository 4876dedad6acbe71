/**
 * Decompression bombs against the fleet as separate processes (the built bundles, node tools/dev/build.mjs first,
 * or the sources with --from-source; default MEDIA_MAX_* limits; tools/bench/support/fleet.ts): a 100-megapixel
 * PNG to every public route that decodes uploads, and a WAV header claiming ten hours; prints each answer's status, the slowest latency and the peak growth of resident
 * memory of the service process (with its children) that grew most (VmHWM reset before each request).
 *   pnpm bench:media-bombs [--n 5] [--from-source]
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import sharp from 'sharp';
import { multipart } from '../../test/support/multipart.js';
import { onboardTenant, startProcessFleet } from './support/fleet.js';
import { childrenOf } from './support/proc.js';

const { values } = parseArgs({
  options: { n: { type: 'string', default: '5' }, 'from-source': { type: 'boolean', default: false } },
});
const N = Number(values.n);
const kb = (pid: number, field: string) => {
  try {
    return Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0; // the process exited between the listing and the read
  }
};
/** A process and its live descendants (the signer's and verifier's C2PA children, ffmpeg). */
const tree = (pid: number): number[] => [pid, ...childrenOf(pid).flatMap(tree)];

const fleet = await startProcessFleet({
  entry: values['from-source'] ? 'source' : 'bundle',
  overrides: { LOG_LEVEL: 'warn' },
});
const request = (path: string, init: RequestInit & { key?: string } = {}) => {
  const { key, ...rest } = init;
  const headers = new Headers(rest.headers);
  if (key) headers.set('authorization', `Bearer ${key}`);
  return fetch(`${fleet.base}${path}`, { ...rest, headers });
};
try {
  const tenant = { api_key: await onboardTenant(fleet.base, 'Bombs') };
  const bomb = await sharp({ create: { width: 10_000, height: 10_000, channels: 3, background: '#3a6ea5' } })
    .png({ compressionLevel: 9 })
    .toBuffer();
  const wav = Buffer.alloc(44 + 8000, 0x80);
  wav.write('RIFF', 0, 'latin1');
  wav.writeUInt32LE(36 + 288_000_000, 4);
  wav.write('WAVEfmt ', 8, 'latin1');
  wav.writeUInt32LE(16, 16);
  wav.writeUInt16LE(1, 20);
  wav.writeUInt16LE(1, 22);
  wav.writeUInt32LE(8000, 24);
  wav.writeUInt32LE(8000, 28);
  wav.writeUInt16LE(1, 32);
  wav.writeUInt16LE(8, 34);
  wav.write('data', 36, 'latin1');
  wav.writeUInt32LE(288_000_000, 40);
  const form = (field: string, bytes: Buffer, name: string, fields: Record<string, string> = {}) =>
    multipart(fields, { field, bytes, name });
  const sign = (bytes: Buffer, name: string, recipe: string) =>
    request('/v1/sign', {
      method: 'POST',
      key: tenant.api_key,
      headers: { 'idempotency-key': crypto.randomUUID() },
      body: form('asset', bytes, name, { recipe }),
    });
  const routes: Array<[string, () => Promise<Response>]> = [
    [
      'PNG 100 MP → public /v1/verify',
      () => request('/v1/verify', { method: 'POST', body: form('file', bomb, 'b.png') }),
    ],
    ['PNG 100 MP → /v1/sign', () => sign(bomb, 'b.png', 'image-genai-v1')],
    [
      'PNG 100 MP → /c2pa/v1/matches/byContent',
      () =>
        request('/c2pa/v1/matches/byContent', {
          method: 'POST',
          headers: { 'content-type': 'image/png' },
          body: bomb,
        }),
    ],
    [
      'PNG 100 MP → /v1/lookup',
      () => request('/v1/lookup', { method: 'POST', key: tenant.api_key, body: form('file', bomb, 'b.png') }),
    ],
    ['WAV "10 h" → /v1/sign', () => sign(wav, 'w.wav', 'audio-genai-v1')],
  ];
  console.log(
    `bomb PNG: ${(bomb.length / 1024).toFixed(0)} KB; ${N} requests per route (public verify limited to its per-minute budget)`,
  );
  for (const [name, send] of routes) {
    let slowest = 0;
    let peak = 0;
    let grew = '';
    const statuses = new Set<number>();
    for (let i = 0; i < N; i++) {
      const before = new Map<string, Map<number, number>>();
      for (const [service, { child }] of fleet.processes) {
        const rss = new Map<number, number>();
        for (const pid of tree(child.pid!)) {
          try {
            writeFileSync(`/proc/${pid}/clear_refs`, '5');
          } catch {
            continue; // exited since the listing
          }
          rss.set(pid, kb(pid, 'VmRSS'));
        }
        before.set(service, rss);
      }
      const started = performance.now();
      const res = await send();
      await res.arrayBuffer();
      slowest = Math.max(slowest, performance.now() - started);
      for (const [service, rss] of before) {
        let growth = 0;
        for (const [pid, was] of rss) growth += Math.max(0, kb(pid, 'VmHWM') - was);
        if (growth > peak) [peak, grew] = [growth, service];
      }
      statuses.add(res.status);
    }
    console.log(
      `${name.padEnd(44)} status ${[...statuses].join('/')}  slowest ${slowest.toFixed(0)} ms  peak RSS growth ${(peak / 1024).toFixed(1)} MB${grew ? ` (${grew})` : ''}`,
    );
  }
} finally {
  await fleet.stop();
}
