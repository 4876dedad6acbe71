import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { formatLogLine, servicePrefix, Tail, type FormatOptions } from './logs.js';

export interface ChildExit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface OutputOptions extends FormatOptions {
  /** Pass the services' JSON lines through unchanged (still prefixed). */
  raw: boolean;
  prefixWidth: number;
}

/** One service process, its output prefixed line by line, and how it ended. */
export class ServiceProcess {
  readonly tail = new Tail(40);
  readonly exited: Promise<ChildExit>;
  exit: ChildExit | undefined;
  private readonly child: ChildProcess;

  constructor(
    readonly name: string,
    index: number,
    command: readonly string[],
    options: { cwd: string; env: NodeJS.ProcessEnv; output: OutputOptions; stdout: Writable; stderr: Writable },
  ) {
    const [file, ...args] = command;
    if (!file) throw new Error(`empty command for ${name}`);
    // Own process group: a terminal's Ctrl-C reaches only the launcher, which forwards one SIGTERM, so the
    // service drains instead of taking the second signal as "exit now".
    this.child = spawn(file, args, {
      cwd: options.cwd,
      env: options.env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const prefix = servicePrefix(name, index, options.output.prefixWidth, options.output);
    const plainPrefix = servicePrefix(name, index, options.output.prefixWidth, { color: false });
    const pipe = (stream: Readable | null, to: Writable) => {
      if (!stream) return;
      const lines = createInterface({ input: stream, crlfDelay: Infinity });
      lines.on('line', (line) => {
        const shown = options.output.raw ? [line] : formatLogLine(line, options.output);
        for (const s of shown) to.write(`${prefix}${s}\n`);
        // The tail is printed again on failure, to stderr or a log: without colours.
        const plain = options.output.raw
          ? [line]
          : options.output.color
            ? formatLogLine(line, { color: false })
            : shown;
        for (const s of plain) this.tail.push(`${plainPrefix}${s}`);
      });
    };
    pipe(this.child.stdout, options.stdout);
    pipe(this.child.stderr, options.stderr);
    this.exited = new Promise((resolve) => {
      // 'close' comes after the output streams are drained, so the tail is complete by then.
      this.child.once('close', (code, signal) => {
        this.exit = { code, signal };
        resolve(this.exit);
      });
      this.child.once('error', (error) => {
        this.tail.push(`${plainPrefix}cannot run ${command.join(' ')}: ${error.message}`);
        if (this.child.pid === undefined) {
          this.exit = { code: 127, signal: null };
          resolve(this.exit);
        }
      });
    });
  }

  get running(): boolean {
    return this.exit === undefined;
  }

  get pid(): number | undefined {
    return this.child.pid;
  }

  signal(signal: NodeJS.Signals): void {
    if (this.running) this.child.kill(signal);
  }
}

export function describeExit(exit: ChildExit): string {
  if (exit.signal) return `killed by ${exit.signal}`;
  return `exited with code ${exit.code ?? 'unknown'}`;
}

/**
 * SIGTERM to every running service (each drains and exits 0), SIGKILL to those still running after the
 * grace period. Resolves with the exits in the order of `processes`.
 */
export async function stopAll(
  processes: readonly ServiceProcess[],
  graceMs: number,
  onKill: (name: string) => void,
): Promise<ChildExit[]> {
  for (const p of processes) p.signal('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const all = Promise.all(processes.map((p) => p.exited));
  const timedOut = await Promise.race([
    all.then(() => false),
    new Promise<boolean>((resolve) => {
      timer = setTimeout(() => resolve(true), graceMs);
    }),
  ]);
  clearTimeout(timer);
  if (timedOut) {
    for (const p of processes) {
      if (p.running) {
        onKill(p.name);
        p.signal('SIGKILL');
      }
    }
  }
  return all;
}

/** The first of the processes to exit (never resolves if none does). */
export function firstExit(processes: readonly ServiceProcess[]): Promise<ServiceProcess> {
  return Promise.race(processes.map((p) => p.exited.then(() => p)));
}
