// The verifier's C2PA readers: c2pa-rs runs in @cairn/isolate child processes (reader-child.ts), one read at a
// time each. What this module adds is the verifier's reading of the pool's failures: a child that dies mid-read
// (native panic, stack overflow, OOM) or overruns its budget makes that read `malformed`, since the file is what
// broke it; children that cannot start, or a pool closing, are an outage (C2paReaderUnavailableError), never a
// verdict about the file.
import { mkdtempSync, rmSync } from 'node:fs';
import { unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  childEntryBeside,
  TaskFailedError,
  WorkerCrashedError,
  WorkerPool,
  WorkerTimeoutError,
  WorkerUnavailableError,
} from '@cairn/isolate';
import { C2paReaderUnavailableError, C2paSettingsError } from './errors.js';
import { isReading, reviveReading, type ReadTask } from './protocol.js';
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

/** reader-child next to the running module (the bundle's or the source's: childEntryBeside). */
export function defaultChildEntry(moduleUrl: string = import.meta.url): URL {
  return childEntryBeside(moduleUrl, 'reader-child');
}

/** A read's failure as the verifier answers it: a reading when the file is to blame, an error when it is not. */
function outcomeOf(error: unknown): C2paReading {
  if (error instanceof WorkerCrashedError)
    return { kind: 'malformed', detail: `reader process crashed (${error.reason})` };
  if (error instanceof WorkerTimeoutError)
    return { kind: 'malformed', detail: `timed out after ${error.timeoutMs} ms` };
  if (error instanceof TaskFailedError) {
    if (error.errorName === 'C2paSettingsError') throw new C2paSettingsError(error.message);
    return { kind: 'malformed', detail: `reader failed: ${error.message}` };
  }
  if (error instanceof WorkerUnavailableError) throw new C2paReaderUnavailableError(error.message);
  throw error;
}

export class ReaderPool {
  private readonly pool: WorkerPool;
  private readonly dir: string;
  private nextId = 1;
  private closed = false;
  /** Settles when the latest read has joined the pool's queue: reads join it in the order they were asked. */
  private lastQueued: Promise<void> = Promise.resolve();

  constructor(options: ReaderPoolOptions = {}) {
    try {
      this.pool = new WorkerPool({
        name: 'C2PA reader',
        entry: options.childEntry ?? defaultChildEntry(),
        size: options.size ?? 2,
        timeoutMs: options.timeoutMs ?? 5000,
        ...(options.startupTimeoutMs !== undefined ? { startupTimeoutMs: options.startupTimeoutMs } : {}),
      });
    } catch (error) {
      // The likeliest deployment mistake is a bundle without the child entry: say so at startup, not per file.
      throw error instanceof WorkerUnavailableError ? new C2paReaderUnavailableError(error.message) : error;
    }
    // Private directory for the assets handed to children (mode 0700 from mkdtemp): a file, not IPC, carries them.
    this.dir = mkdtempSync(join(tmpdir(), 'cairn-c2pa-'));
    process.once('exit', this.removeDir);
  }

  /**
   * Resolves once every child has loaded c2pa-node (a service can await it before reporting ready, so the
   * first request's budget is not spent on process start); rejects if the children cannot start.
   */
  async ready(): Promise<void> {
    try {
      await this.pool.ready();
    } catch (error) {
      outcomeOf(error);
    }
  }

  /** PIDs of the live children (for operations and tests). */
  get pids(): number[] {
    return this.pool.pids;
  }

  async read(
    asset: Buffer,
    mimeType: string,
    settings: string,
    timeoutMs?: number,
    sidecar?: Buffer,
  ): Promise<C2paReading> {
    if (this.closed) throw new C2paReaderUnavailableError('C2PA reader pool is closed');
    const path = join(this.dir, `${this.nextId++}.asset`);
    // The asset files are written concurrently and their writes can finish in any order; each read still joins
    // the queue after the one asked before it, so a read never overtakes an earlier one (whose budget it could
    // otherwise outwait behind a stuck child).
    const written = writeFile(path, asset, { mode: 0o600 });
    const queued = this.lastQueued.then(() => written);
    // The failed write is this read's to answer (below); the next read only waits for its turn.
    this.lastQueued = queued.catch(() => undefined);
    try {
      await queued;
      const task: ReadTask = { path, mimeType, settings, ...(sidecar ? { sidecar } : {}) };
      const answer = await this.pool.run(task, timeoutMs !== undefined ? { timeoutMs } : {});
      if (!isReading(answer)) return { kind: 'malformed', detail: 'reader answered something else than a reading' };
      return reviveReading(answer);
    } catch (error) {
      return outcomeOf(error);
    } finally {
      await unlink(path).catch(() => undefined); // best effort: a left-over file sits in the OS temp directory
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.pool.close();
    process.removeListener('exit', this.removeDir);
    this.removeDir();
  }

  /** Also run at process exit, for a pool nobody closed. */
  private readonly removeDir = (): void => {
    rmSync(this.dir, { recursive: true, force: true });
  };
}
