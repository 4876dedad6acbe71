// A layer of a sign run alone, for `bench:fleet-cost`'s "fleet / kernels" ratio: each service's layers run in a
// process of their own (services/<svc>/bench/kernels.ts; no process imports two services' code), measure their
// CPU here and answer one JSON line on stdout, which the fleet-level bench reads.
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { procStat } from '../../tools/bench/support/proc.js';

/** One layer's name and its median CPU ms. */
export type Kernels = Array<[string, number]>;

export const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;

/** This process's CPU: all its threads, and the children it reaped (ffmpeg). */
export function cpuNowMs(): number {
  const own = process.cpuUsage();
  return (own.user + own.system) / 1000 + (procStat(process.pid)?.reapedMs ?? 0);
}

/** The median CPU of `rounds` timed runs, after one untimed (a running service has its code compiled). */
export async function kernelMs<T>(rounds: number, run: () => Promise<T> | T): Promise<{ ms: number; value: T }> {
  let value = await run();
  const samples: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const t0 = cpuNowMs();
    value = await run();
    samples.push(cpuNowMs() - t0);
  }
  return { ms: median(samples), value };
}

/** The child's answer. Exits: a c2pa-node callback signer's channel would keep the process alive. */
export function answer(kernels: Kernels): never {
  process.stdout.write(`${JSON.stringify({ kernels })}\n`);
  process.exit(0);
}

/** Runs a kernels script (a path from the repository root) and reads its answer. */
export async function runKernels(script: string, args: string[]): Promise<Kernels> {
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', script, ...args], {
    maxBuffer: 16 * 1024 * 1024,
  });
  const last = stdout.trim().split('\n').at(-1) ?? '';
  return (JSON.parse(last) as { kernels: Kernels }).kernels;
}
