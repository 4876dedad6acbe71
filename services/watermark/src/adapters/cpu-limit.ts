import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { parseCfsQuota, parseCpuMax, workersForCpuLimit, type CpuLimit } from '../domain/cpu-limit.js';

export interface PoolSizing {
  size: number;
  /** Where the size came from, for the start-up log. */
  source: string;
}

function read(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch {
    // absent: not this cgroup version, or not in a cgroup at all
    return undefined;
  }
}

/**
 * The pool size the container's CPU limit allows: cgroup v2 `cpu.max`, else cgroup v1's CFS quota (under `cpu/` or
 * `cpu,cpuacct/`), else one per core the process sees. In a container `/sys/fs/cgroup` is the container's own
 * cgroup, so a Kubernetes `limits.cpu` of 1500m reads as 150000/100000 and gives 2 workers.
 */
export function poolSizeFromCgroup(root = '/sys/fs/cgroup', cores: number = availableParallelism()): PoolSizing {
  const found = (limit: CpuLimit, file: string): PoolSizing | undefined => {
    if (limit === undefined) return undefined;
    const size = workersForCpuLimit(limit, cores);
    return limit === 'unlimited'
      ? { size, source: `${file}: no CPU limit; ${cores} cores available` }
      : { size, source: `${file}: CPU limit ${limit.cpus}; ${cores} cores available` };
  };
  const v2 = join(root, 'cpu.max');
  const cpuMax = read(v2);
  if (cpuMax !== undefined) {
    const sizing = found(parseCpuMax(cpuMax), v2);
    if (sizing) return sizing;
  }
  for (const dir of ['cpu', 'cpu,cpuacct']) {
    const quotaFile = join(root, dir, 'cpu.cfs_quota_us');
    const quota = read(quotaFile);
    const period = read(join(root, dir, 'cpu.cfs_period_us'));
    if (quota === undefined || period === undefined) continue;
    const sizing = found(parseCfsQuota(quota, period), quotaFile);
    if (sizing) return sizing;
  }
  return { size: workersForCpuLimit(undefined, cores), source: `no cgroup CPU limit found; ${cores} cores available` };
}
