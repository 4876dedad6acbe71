// What processes cost, read from Linux's /proc: CPU (utime and stime, in clock ticks) and resident memory of a
// process with everything it started, for benches that measure the fleet as separate processes.
import { readdirSync, readFileSync } from 'node:fs';

/** USER_HZ: /proc reports CPU in these ticks (100 on every Linux build this runs on; `getconf CLK_TCK`). */
const TICK_MS = 10;

export interface ProcStat {
  pid: number;
  comm: string;
  ppid: number;
  /** Own CPU (all threads, exited ones included), ms. */
  ownMs: number;
  /** CPU of exited children the process has waited for (and theirs, recursively), ms. */
  reapedMs: number;
  /** Start time in ticks after boot: tells a new process from an old one that reused the pid. */
  start: number;
}

/** /proc/<pid>/stat, or undefined when the process is gone. */
export function procStat(pid: number): ProcStat | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined; // exited
  }
  // comm may hold spaces and parentheses: the fields after it start at the last ')'.
  const close = text.lastIndexOf(')');
  const comm = text.slice(text.indexOf('(') + 1, close);
  const f = text
    .slice(close + 2)
    .split(' ')
    .map(Number);
  // f[0] is field 3 (state): utime 14, stime 15, cutime 16, cstime 17, starttime 22.
  return {
    pid,
    comm,
    ppid: f[1]!,
    ownMs: (f[11]! + f[12]!) * TICK_MS,
    reapedMs: (f[13]! + f[14]!) * TICK_MS,
    start: f[19]!,
  };
}

/** The live children of a process (all its threads'). */
export function childrenOf(pid: number): number[] {
  const out: number[] = [];
  try {
    for (const task of readdirSync(`/proc/${pid}/task`))
      for (const child of readFileSync(`/proc/${pid}/task/${task}/children`, 'utf8').split(' ').filter(Boolean))
        out.push(Number(child));
  } catch {
    // the process exited between the listing and the read
  }
  return out;
}

/**
 * CPU ms of a process and all it started: its own, its exited children's (once reaped), and each live
 * descendant's the same way. A child that exited but is not yet reaped is missed until it is.
 */
export function treeCpuMs(pid: number): number {
  const stat = procStat(pid);
  if (!stat) return 0;
  let total = stat.ownMs + stat.reapedMs;
  for (const child of childrenOf(pid)) total += treeCpuMs(child);
  return total;
}

/** Resident kB of a process and all its descendants. */
export function treeRssKb(pid: number): number {
  let total = 0;
  try {
    total = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0; // exited
  }
  for (const child of childrenOf(pid)) total += treeRssKb(child);
  return total;
}

/** Every process whose command name (as /proc/<pid>/comm has it) is `comm`. */
export function processesNamed(comm: string): ProcStat[] {
  const out: ProcStat[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = procStat(Number(entry));
    if (stat?.comm === comm) out.push(stat);
  }
  return out;
}

/** The roots among processes called `comm`: those whose parent is not one (the postmaster, not its backends). */
export function rootsNamed(comm: string): number[] {
  const all = processesNamed(comm);
  const pids = new Set(all.map((p) => p.pid));
  return all.filter((p) => !pids.has(p.ppid)).map((p) => p.pid);
}

/** The command line as `ps` shows it (a Postgres backend's says its role, database and state). */
export function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
  } catch {
    return ''; // exited
  }
}

/** Machine-wide busy CPU ms, all cores (user, nice, system, irq, softirq, steal from /proc/stat). */
export function machineBusyMs(): number {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]!;
  const [, user, nice, system, , , irq, softirq, steal] = line.split(/\s+/).slice(0, 9).map(Number);
  return (user! + nice! + system! + irq! + softirq! + steal!) * TICK_MS;
}
