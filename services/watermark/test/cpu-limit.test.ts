import { afterAll, describe, expect, it } from '@jest/globals';
import { availableParallelism, tmpdir } from 'node:os';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { startService } from '@cairn/runtime';
import { createSandbox, type Sandbox } from '@cairn/testing';
import { parseCfsQuota, parseCpuMax, workersForCpuLimit } from '../src/domain/cpu-limit.js';
import { poolSizeFromCgroup } from '../src/adapters/cpu-limit.js';
import { watermarkService } from '../src/service.js';

describe('the CPU limit from cgroup files', () => {
  it('reads cgroup v2 cpu.max as the kernel writes it', () => {
    expect(parseCpuMax('max 100000\n')).toBe('unlimited');
    expect(parseCpuMax('200000 100000\n')).toEqual({ cpus: 2 });
    expect(parseCpuMax('150000 100000\n')).toEqual({ cpus: 1.5 }); // limits.cpu: 1500m
    expect(parseCpuMax('50000 100000')).toEqual({ cpus: 0.5 });
    for (const malformed of ['', 'max', '150000', 'abc 100000', '150000 0', '1 2 3', '1.5 100000'])
      expect(parseCpuMax(malformed)).toBeUndefined();
  });

  it('reads cgroup v1 cpu.cfs_quota_us and cpu.cfs_period_us', () => {
    expect(parseCfsQuota('-1\n', '100000\n')).toBe('unlimited');
    expect(parseCfsQuota('300000\n', '100000\n')).toEqual({ cpus: 3 });
    expect(parseCfsQuota('25000', '100000')).toEqual({ cpus: 0.25 });
    expect(parseCfsQuota('', '100000')).toBeUndefined();
    expect(parseCfsQuota('100000', 'x')).toBeUndefined();
  });

  it('sizes the pool: the limit rounded up, at most the cores, at least one', () => {
    expect(workersForCpuLimit({ cpus: 1.5 }, 8)).toBe(2);
    expect(workersForCpuLimit({ cpus: 2 }, 8)).toBe(2);
    expect(workersForCpuLimit({ cpus: 0.25 }, 8)).toBe(1);
    expect(workersForCpuLimit({ cpus: 16 }, 4)).toBe(4); // a limit above the node's cores
    expect(workersForCpuLimit('unlimited', 6)).toBe(6);
    expect(workersForCpuLimit(undefined, 3)).toBe(3);
    expect(workersForCpuLimit(undefined, 0)).toBe(1);
  });
});

describe('poolSizeFromCgroup', () => {
  const roots: string[] = [];
  const root = async (files: Record<string, string>): Promise<string> => {
    const dir = await mkdtemp(join(tmpdir(), 'cairn-cgroup-'));
    roots.push(dir);
    for (const [path, text] of Object.entries(files)) {
      await mkdir(join(dir, path, '..'), { recursive: true });
      await writeFile(join(dir, path), text);
    }
    return dir;
  };
  afterAll(async () => {
    for (const dir of roots) await rm(dir, { recursive: true, force: true });
  });

  it('follows cgroup v2 first, then v1 (cpu/ or cpu,cpuacct/), then the cores, and says which', async () => {
    const v2 = await root({
      'cpu.max': '150000 100000\n',
      'cpu/cpu.cfs_quota_us': '400000',
      'cpu/cpu.cfs_period_us': '100000',
    });
    expect(poolSizeFromCgroup(v2, 8)).toEqual({ size: 2, source: `${v2}/cpu.max: CPU limit 1.5; 8 cores available` });

    const v2Unlimited = await root({ 'cpu.max': 'max 100000\n' });
    expect(poolSizeFromCgroup(v2Unlimited, 8)).toEqual({
      size: 8,
      source: `${v2Unlimited}/cpu.max: no CPU limit; 8 cores available`,
    });

    const v1 = await root({ 'cpu,cpuacct/cpu.cfs_quota_us': '300000\n', 'cpu,cpuacct/cpu.cfs_period_us': '100000\n' });
    expect(poolSizeFromCgroup(v1, 8)).toEqual({
      size: 3,
      source: `${v1}/cpu,cpuacct/cpu.cfs_quota_us: CPU limit 3; 8 cores available`,
    });

    const none = await root({});
    expect(poolSizeFromCgroup(none, 4)).toEqual({ size: 4, source: 'no cgroup CPU limit found; 4 cores available' });

    // An unreadable v2 file does not hide a v1 limit.
    const garbled = await root({
      'cpu.max': 'garbage',
      'cpu/cpu.cfs_quota_us': '100000',
      'cpu/cpu.cfs_period_us': '100000',
    });
    expect(poolSizeFromCgroup(garbled, 4).size).toBe(1);
  });
});

describe('the watermark service without WATERMARK_WORKERS', () => {
  let sandbox: Sandbox | undefined;
  afterAll(() => sandbox?.dispose());

  it("sizes its pool from this machine's cgroup and logs the size and where it came from", async () => {
    sandbox = await createSandbox({ LOG_LEVEL: 'info' });
    const lines: Array<Record<string, unknown>> = [];
    const service = await startService({
      ...watermarkService(sandbox.env),
      logDestination: { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
    });
    await service.stop();
    const started = lines.find((l) => l.msg === 'image worker pool started');
    const expected = poolSizeFromCgroup();
    expect(started).toMatchObject({ workers: expected.size, workers_source: expected.source });
    expect(expected.size).toBeGreaterThanOrEqual(1);
    expect(expected.size).toBeLessThanOrEqual(availableParallelism());
  }, 60_000);
});
