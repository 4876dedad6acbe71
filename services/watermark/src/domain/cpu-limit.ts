/**
 * The container's CPU limit, read from its cgroup files: a number of CPUs (fractional, e.g. 1.5), `unlimited`, or
 * undefined when the text is not what the kernel writes (treated as no information).
 */
export type CpuLimit = { cpus: number } | 'unlimited' | undefined;

function quotaOver(quota: number, period: number): CpuLimit {
  if (!Number.isFinite(quota) || !Number.isFinite(period) || period <= 0) return undefined;
  if (quota <= 0) return 'unlimited';
  return { cpus: quota / period };
}

const INTEGER = /^-?\d+$/;

/** cgroup v2 `cpu.max`: `<quota> <period>` in microseconds, or `max <period>` for no limit. */
export function parseCpuMax(text: string): CpuLimit {
  const [quota, period, extra] = text.trim().split(/\s+/);
  if (quota === undefined || period === undefined || extra !== undefined || !INTEGER.test(period)) return undefined;
  if (quota === 'max') return 'unlimited';
  if (!INTEGER.test(quota)) return undefined;
  return quotaOver(Number(quota), Number(period));
}

/** cgroup v1 `cpu.cfs_quota_us` (-1 = no limit) and `cpu.cfs_period_us`. */
export function parseCfsQuota(quotaText: string, periodText: string): CpuLimit {
  const quota = quotaText.trim();
  const period = periodText.trim();
  if (!INTEGER.test(quota) || !INTEGER.test(period)) return undefined;
  return quotaOver(Number(quota), Number(period));
}

/**
 * Worker threads for a CPU limit: one per CPU the container may use, a started one counting whole (1.5 CPUs → 2,
 * the half CPU is still worth a thread), never more than the cores the process sees, at least one.
 */
export function workersForCpuLimit(limit: CpuLimit, cores: number): number {
  const all = Math.max(1, Math.floor(cores));
  if (limit === undefined || limit === 'unlimited') return all;
  return Math.max(1, Math.min(all, Math.ceil(limit.cpus)));
}
