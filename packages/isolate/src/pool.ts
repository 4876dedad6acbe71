// A pool of child processes for work that parses hostile input natively (c2pa-rs, libvips). Each child runs one
// task at a time under a time budget and a V8 heap budget; a task that overruns gets its child SIGKILLed, a child
// that dies mid-task (native panic, abort, OOM) fails that task alone. Either way a fresh child replaces it and
// the service process stays up. The verifier reads C2PA and the signer signs through it.
import { fork, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { isChildMessage, type ParentMessage } from './protocol.js';

/**
 * The child entry `name` beside the module at `moduleUrl` (pass import.meta.url): `.js` inside an esbuild bundle
 * (dist/main.js → dist/<name>.js), `.ts` when running from source (jest, `node --import tsx`).
 */
export function childEntryBeside(moduleUrl: string, name: string): URL {
  const ext = new URL(moduleUrl).pathname.endsWith('.js') ? 'js' : 'ts';
  return new URL(`./${name}.${ext}`, moduleUrl);
}

export interface WorkerPoolOptions {
  /** Names the pool in errors and logs, e.g. "c2pa-sign". */
  name: string;
  /** Child entry file (.js in a bundle; .ts runs through tsx). */
  entry: string | URL;
  /** Child processes kept (default 2). */
  size?: number;
  /** Budget of one task, from hand-over to the child until its answer (default 30 s). */
  timeoutMs?: number;
  /** V8 heap of each child, MiB (`--max-old-space-size`); native allocations are bounded by the parsers' own limits. */
  maxOldSpaceMb?: number;
  /** How long a new child may take to start before it counts as failed (default 20 s). */
  startupTimeoutMs?: number;
}

export interface RunOptions {
  timeoutMs?: number;
  /** Answers the task's `context.call(payload)` requests (e.g. "sign these bytes" with a key kept in this process). */
  onCall?: (payload: unknown) => Promise<unknown>;
}

/** The child died while running the task (signal or exit): the task did not finish. */
export class WorkerCrashedError extends Error {
  override readonly name = 'WorkerCrashedError';
  constructor(
    message: string,
    /** How the child went: the signal (`SIGKILL`) or `exit code N`. */
    readonly reason: string,
  ) {
    super(message);
  }
}

/** The task overran its budget; its child was killed. */
export class WorkerTimeoutError extends Error {
  override readonly name = 'WorkerTimeoutError';
  constructor(
    message: string,
    readonly timeoutMs: number,
  ) {
    super(message);
  }
}

/** No child could be started, or the pool is closed: an infrastructure failure, nothing about the input. */
export class WorkerUnavailableError extends Error {
  override readonly name = 'WorkerUnavailableError';
}

/** The task's handler threw in the child; `errorName` is the thrown error's name (e.g. a parser's refusal). */
export class TaskFailedError extends Error {
  override readonly name = 'TaskFailedError';
  constructor(
    readonly errorName: string,
    message: string,
  ) {
    super(message);
  }
}

function execArgvFor(entryPath: string, maxOldSpaceMb: number | undefined): string[] {
  const argv = maxOldSpaceMb ? [`--max-old-space-size=${maxOldSpaceMb}`] : [];
  if (!entryPath.endsWith('.ts')) return argv;
  // Resolve tsx from here rather than from the process's cwd, so the child starts wherever jest runs.
  try {
    return [...argv, '--import', pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href];
  } catch {
    return [...argv, '--import', 'tsx'];
  }
}

interface Task {
  id: number;
  payload: unknown;
  timeoutMs: number;
  onCall?: (payload: unknown) => Promise<unknown>;
  resolve(value: unknown): void;
  reject(error: Error): void;
}

interface Worker {
  child: ChildProcess;
  ready: boolean;
  task?: Task;
  timer?: NodeJS.Timeout;
  /** Set once the worker has been given up on, so exit/error/timeout settle its task only once. */
  gone: boolean;
}

const MAX_START_FAILURES = 3;

export class WorkerPool {
  private readonly size: number;
  private readonly timeoutMs: number;
  private readonly startupTimeoutMs: number;
  private readonly entryPath: string;
  private readonly execArgv: string[];
  private readonly workers = new Set<Worker>();
  private readonly queue: Task[] = [];
  private nextId = 1;
  private startFailures = 0;
  private closed = false;
  private readyWaiters: Array<{ resolve(): void; reject(error: Error): void }> = [];

  constructor(private readonly options: WorkerPoolOptions) {
    this.size = Math.max(1, options.size ?? 2);
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.startupTimeoutMs = options.startupTimeoutMs ?? 20_000;
    this.entryPath = options.entry instanceof URL ? fileURLToPath(options.entry) : options.entry;
    // The likeliest deployment mistake is a bundle without the child entry: say so at startup, not per task.
    if (!existsSync(this.entryPath))
      throw new WorkerUnavailableError(
        `${options.name} child not found at ${this.entryPath} (bundle it next to the service entry)`,
      );
    this.execArgv = execArgvFor(this.entryPath, options.maxOldSpaceMb);
    for (let i = 0; i < this.size; i++) this.spawn();
  }

  /** Resolves once every child has started; rejects if they cannot. */
  ready(): Promise<void> {
    if (this.closed) return Promise.reject(new WorkerUnavailableError(`${this.options.name} pool is closed`));
    this.refill();
    if (this.readyCount() >= this.size) return Promise.resolve();
    return new Promise((resolve, reject) => this.readyWaiters.push({ resolve, reject }));
  }

  /** PIDs of the live children (for operations and tests). */
  get pids(): number[] {
    return [...this.workers].map((w) => w.child.pid).filter((pid): pid is number => pid !== undefined);
  }

  /** PIDs of the children running a task right now. */
  get busyPids(): number[] {
    return [...this.workers]
      .filter((w) => w.task && !w.gone)
      .map((w) => w.child.pid)
      .filter((pid): pid is number => pid !== undefined);
  }

  run(payload: unknown, options: RunOptions = {}): Promise<unknown> {
    if (this.closed) return Promise.reject(new WorkerUnavailableError(`${this.options.name} pool is closed`));
    this.refill();
    return new Promise((resolve, reject) => {
      this.queue.push({
        id: this.nextId++,
        payload,
        timeoutMs: options.timeoutMs ?? this.timeoutMs,
        ...(options.onCall ? { onCall: options.onCall } : {}),
        resolve,
        reject,
      });
      this.dispatch();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    const closedError = new WorkerUnavailableError(`${this.options.name} pool closed`);
    for (const task of this.queue.splice(0)) task.reject(closedError);
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
  }

  private readyCount(): number {
    return [...this.workers].filter((w) => w.ready && !w.gone).length;
  }

  private spawn(): void {
    if (this.closed) return;
    const child = fork(this.entryPath, [], {
      execArgv: this.execArgv,
      serialization: 'advanced',
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const worker: Worker = { child, ready: false, gone: false };
    this.workers.add(worker);
    // Idle children must not keep the service alive; a pending task keeps it alive through its timer.
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
      const task = worker.task;
      if (!task || task.id !== message.id || worker.gone) return;
      if (message.type === 'call') {
        const answer = (reply: ParentMessage) => {
          if (worker.task === task && !worker.gone) worker.child.send(reply);
        };
        const onCall = task.onCall ?? (() => Promise.reject(new Error('this task takes no calls')));
        onCall(message.payload).then(
          (value) => answer({ type: 'call-result', id: task.id, callId: message.callId, ok: true, value }),
          (error: unknown) =>
            answer({
              type: 'call-result',
              id: task.id,
              callId: message.callId,
              ok: false,
              message: error instanceof Error ? error.message : String(error),
            }),
        );
        return;
      }
      this.finish(worker);
      if (message.type === 'done') task.resolve(message.value);
      else task.reject(new TaskFailedError(message.name, message.message));
      this.dispatch();
    });
    const onDeath = (why: string): void => {
      clearTimeout(startTimer);
      if (worker.gone) return;
      if (!worker.ready) return this.failStart(worker, why);
      this.retire(worker, new WorkerCrashedError(`${this.options.name} worker crashed (${why})`, why));
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
      // Answer the queued tasks rather than leave them hanging; no retry loop: the next run() refills the pool.
      this.startFailures = 0;
      const error = new WorkerUnavailableError(`${this.options.name} child ${why} (${this.entryPath})`);
      for (const task of this.queue.splice(0)) task.reject(error);
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
      if (!worker.ready || worker.task || worker.gone) continue;
      const task = this.queue.shift() as Task;
      worker.task = task;
      worker.timer = setTimeout(() => {
        // A hung or runaway native parse: kill the process, fail the task, start a replacement.
        this.retire(
          worker,
          new WorkerTimeoutError(`${this.options.name} task timed out after ${task.timeoutMs} ms`, task.timeoutMs),
        );
        this.spawn();
        this.dispatch();
      }, task.timeoutMs);
      const message: ParentMessage = { type: 'task', id: task.id, payload: task.payload };
      worker.child.send(message, (error) => {
        if (!error || worker.task !== task) return;
        // The child went away before it got the task: not the input's fault, so the task goes back in line.
        this.finish(worker);
        this.queue.unshift(task);
        this.retire(worker);
        this.spawn();
      });
    }
    if (this.queue.length > 0 && this.workers.size < this.size) this.refill();
  }

  private finish(worker: Worker): void {
    clearTimeout(worker.timer);
    worker.timer = undefined;
    worker.task = undefined;
  }

  /** Kills a worker and fails its task, if it has one. */
  private retire(worker: Worker, error: Error = new WorkerUnavailableError(`${this.options.name} child lost`)): void {
    if (worker.gone) return;
    worker.gone = true;
    const task = worker.task;
    this.finish(worker);
    this.workers.delete(worker);
    if (worker.child.exitCode === null && worker.child.signalCode === null) worker.child.kill('SIGKILL');
    task?.reject(error);
  }
}
