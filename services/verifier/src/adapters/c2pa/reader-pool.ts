// A small pool of reader child processes (reader-child.ts). Each child does one read at a time; a read that
// overruns its budget gets the child SIGKILLed, and a child that dies mid-read (native panic, stack overflow,
// OOM) makes that read `malformed`. Either way a fresh child replaces it and the verifier process stays up.
import { fork, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { unlink, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { isChildMessage, reviveReading, type ReadRequest } from './protocol.js';
import type { C2paReading } from '../../domain/c2pa/types.js';

export interface ReaderPoolOptions {
  /** Child processes kept (default 2: the verifier's machines have two cores). */
  size?: number;
  /** Budget of one read, from hand-over to the child until its answer (default 5000 ms). */
  timeoutMs?: number;
  /** How long a new child may take to load c2pa-node before it counts as failed (default 20 s). */
  startupTimeoutMs?: number;
  /** Child entry file; default: reader-child.js / .ts next to this module. */
  childEntry?: string | URL;
}

/** The readers cannot be started: an infrastructure failure, not a verdict about the file. */
export class C2paReaderUnavailableError extends Error {
  override readonly name = 'C2paReaderUnavailableError';
}

/** c2pa-rs refused the read's settings (e.g. a trust list it cannot load). */
export class C2paSettingsError extends Error {
  override readonly name = 'C2paSettingsError';
}

/**
 * reader-child next to the running module: `.js` inside the esbuild bundle (dist/main.js → dist/reader-child.js),
 * `.ts` when running from source (jest, `node --import tsx`).
 */
export function defaultChildEntry(moduleUrl: string = import.meta.url): URL {
  const ext = new URL(moduleUrl).pathname.endsWith('.js') ? 'js' : 'ts';
  return new URL(`./reader-child.${ext}`, moduleUrl);
}

function execArgvFor(entryPath: string): string[] {
  if (!entryPath.endsWith('.ts')) return [];
  // Resolve tsx from here rather than from the process's cwd, so the child starts wherever jest runs.
  try {
    const loader = createRequire(import.meta.url).resolve('tsx');
    return ['--import', pathToFileURL(loader).href];
  } catch {
    return ['--import', 'tsx'];
  }
}

interface Job {
  id: number;
  path: string;
  mimeType: string;
  settings: string;
  timeoutMs: number;
  sidecar?: Buffer;
  resolve(reading: C2paReading): void;
  reject(error: Error): void;
}

interface Worker {
  child: ChildProcess;
  ready: boolean;
  job?: Job;
  timer?: NodeJS.Timeout;
  /** Set once the worker has been given up on, so exit/error/timeout settle its job only once. */
  gone: boolean;
}

const MAX_START_FAILURES = 3;

export class ReaderPool {
  private readonly size: number;
  private readonly timeoutMs: number;
  private readonly startupTimeoutMs: number;
  private readonly entryPath: string;
  private readonly execArgv: string[];
  private readonly dir: string;
  private readonly workers = new Set<Worker>();
  private readonly queue: Job[] = [];
  private nextId = 1;
  private startFailures = 0;
  private closed = false;
  private readyWaiters: Array<{ resolve(): void; reject(error: Error): void }> = [];

  constructor(options: ReaderPoolOptions = {}) {
    this.size = Math.max(1, options.size ?? 2);
    this.timeoutMs = options.timeoutMs ?? 5000;
    this.startupTimeoutMs = options.startupTimeoutMs ?? 20_000;
    const entry = options.childEntry ?? defaultChildEntry();
    this.entryPath = entry instanceof URL ? fileURLToPath(entry) : entry;
    // The likeliest deployment mistake is a bundle without the child entry: say so at startup, not per file.
    if (!existsSync(this.entryPath)) {
      throw new C2paReaderUnavailableError(
        `C2PA reader child not found at ${this.entryPath} (bundle src/adapters/c2pa/reader-child.ts next to the service entry)`,
      );
    }
    this.execArgv = execArgvFor(this.entryPath);
    // Private directory for the assets handed to children (mode 0700 from mkdtemp).
    this.dir = mkdtempSync(join(tmpdir(), 'cairn-c2pa-'));
    process.once('exit', this.removeDir);
    for (let i = 0; i < this.size; i++) this.spawn();
  }

  /**
   * Resolves once every child has loaded c2pa-node (a service can await it before reporting ready, so the
   * first request's budget is not spent on process start); rejects if the children cannot start.
   */
  ready(): Promise<void> {
    if (this.closed) return Promise.reject(new C2paReaderUnavailableError('C2PA reader pool is closed'));
    this.refill();
    if (this.readyCount() >= this.size) return Promise.resolve();
    return new Promise((resolve, reject) => this.readyWaiters.push({ resolve, reject }));
  }

  private readyCount(): number {
    return [...this.workers].filter((w) => w.ready && !w.gone).length;
  }

  /** PIDs of the live children (for operations and tests). */
  get pids(): number[] {
    return [...this.workers].map((w) => w.child.pid).filter((pid): pid is number => pid !== undefined);
  }

  async read(
    asset: Buffer,
    mimeType: string,
    settings: string,
    timeoutMs = this.timeoutMs,
    sidecar?: Buffer,
  ): Promise<C2paReading> {
    if (this.closed) throw new C2paReaderUnavailableError('C2PA reader pool is closed');
    this.refill();
    const id = this.nextId++;
    const path = join(this.dir, `${id}.asset`);
    await writeFile(path, asset, { mode: 0o600 });
    try {
      return await new Promise<C2paReading>((resolve, reject) => {
        if (this.closed) return reject(new C2paReaderUnavailableError('C2PA reader pool closed'));
        this.queue.push({ id, path, mimeType, settings, timeoutMs, ...(sidecar ? { sidecar } : {}), resolve, reject });
        this.dispatch();
      });
    } finally {
      await unlink(path).catch(() => undefined); // best effort: a left-over file sits in the OS temp directory
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const closedError = new C2paReaderUnavailableError('C2PA reader pool closed');
    for (const job of this.queue.splice(0)) job.reject(closedError);
    for (const waiter of this.readyWaiters.splice(0)) waiter.reject(closedError);
    const exits: Array<Promise<void>> = [];
    for (const worker of this.workers) {
      const { child } = worker;
      if (child.exitCode === null && child.signalCode === null) {
        child.ref(); // an unref'd child's exit would not keep the process alive long enough to see it
        exits.push(new Promise((resolve) => child.once('exit', () => resolve())));
      }
      this.retire(worker, closedError);
    }
    await Promise.all(exits);
    process.removeListener('exit', this.removeDir);
    this.removeDir();
  }

  /** Also run at process exit, for a pool nobody closed. */
  private readonly removeDir = (): void => {
    rmSync(this.dir, { recursive: true, force: true });
  };

  private spawn(): void {
    if (this.closed) return;
    const child = fork(this.entryPath, [], {
      execArgv: this.execArgv,
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const worker: Worker = { child, ready: false, gone: false };
    this.workers.add(worker);
    // Idle children must not keep the verifier alive; a pending read keeps it alive through its timer.
    child.unref();
    child.channel?.unref();

    const startTimer = setTimeout(() => this.failStart(worker, 'did not start in time'), this.startupTimeoutMs);
    child.on('message', (message: unknown) => {
      if (!isChildMessage(message)) return;
      if (message.type === 'ready') {
        clearTimeout(startTimer);
        worker.ready = true;
        this.startFailures = 0;
        if (this.readyCount() >= this.size) for (const waiter of this.readyWaiters.splice(0)) waiter.resolve();
        this.dispatch();
        return;
      }
      const job = worker.job;
      if (!job || job.id !== message.id) return;
      this.finish(worker);
      if (message.type === 'result') job.resolve(reviveReading(message.reading));
      else job.reject(new C2paSettingsError(message.detail));
      this.dispatch();
    });
    const onDeath = (why: string): void => {
      clearTimeout(startTimer);
      if (worker.gone) return;
      if (!worker.ready) return this.failStart(worker, why);
      this.retire(worker, { kind: 'malformed', detail: `reader process crashed (${why})` });
      this.spawn();
      this.dispatch();
    };
    child.on('exit', (code, signal) => onDeath(signal ?? `exit code ${String(code)}`));
    child.on('error', (error) => onDeath(error.message));
  }

  private failStart(worker: Worker, why: string): void {
    if (worker.gone) return;
    this.retire(worker);
    this.startFailures++;
    if (this.startFailures >= MAX_START_FAILURES) {
      // Give the queued reads an answer rather than leaving them hanging; the next read tries again.
      this.startFailures = 0;
      // No automatic retry loop: the next read() refills the pool.
      const error = new C2paReaderUnavailableError(`C2PA reader child ${why} (${this.entryPath})`);
      for (const job of this.queue.splice(0)) job.reject(error);
      for (const waiter of this.readyWaiters.splice(0)) waiter.reject(error);
      return;
    }
    this.spawn();
  }

  private refill(): void {
    while (!this.closed && this.workers.size < this.size) this.spawn();
  }

  private dispatch(): void {
    for (const worker of this.workers) {
      if (this.queue.length === 0) return;
      if (!worker.ready || worker.job || worker.gone) continue;
      const job = this.queue.shift() as Job;
      worker.job = job;
      worker.timer = setTimeout(() => {
        // A hung or runaway native parse: kill the process, answer for the file, start a replacement.
        this.retire(worker, { kind: 'malformed', detail: `timed out after ${job.timeoutMs} ms` });
        this.spawn();
        this.dispatch();
      }, job.timeoutMs);
      const request: ReadRequest = {
        type: 'read',
        id: job.id,
        path: job.path,
        mimeType: job.mimeType,
        settings: job.settings,
        ...(job.sidecar ? { sidecar: job.sidecar } : {}),
      };
      worker.child.send(request, (error) => {
        if (!error || worker.job !== job) return;
        // The child went away before it got the file: not the file's fault, so the job goes back in line.
        this.finish(worker);
        this.queue.unshift(job);
        this.retire(worker);
        this.spawn();
      });
    }
    if (this.queue.length > 0 && this.workers.size < this.size) this.refill();
  }

  private finish(worker: Worker): void {
    clearTimeout(worker.timer);
    worker.timer = undefined;
    worker.job = undefined;
  }

  /**
   * Kills a worker and settles its job, if it has one: with a reading when the file is to blame (crash,
   * timeout), with an error when it is not (pool closing, child lost before it got the file).
   */
  private retire(
    worker: Worker,
    outcome: C2paReading | Error = new C2paReaderUnavailableError('C2PA reader child lost'),
  ): void {
    if (worker.gone) return;
    worker.gone = true;
    const job = worker.job;
    this.finish(worker);
    this.workers.delete(worker);
    if (worker.child.exitCode === null && worker.child.signalCode === null) worker.child.kill('SIGKILL');
    if (!job) return;
    if (outcome instanceof Error) job.reject(outcome);
    else job.resolve(outcome);
  }
}
