import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Lane, WorkerPool } from '../app/ports.js';
import { poolSizeFromCgroup } from './cpu-limit.js';
import { PoolClosedError } from '../domain/worker-protocol.js';
import { ImageRejectedError, type RawImage } from '../domain/image/raw-image.js';
import type { WatermarkKey } from '../domain/keys.js';
import { transferable } from '../domain/image-tasks.js';
import { movable } from './transfer.js';
import {
  WORKER_READY,
  type DetectOutcome,
  type EmbedOutcome,
  type KeyedAlgorithmName,
  type WorkerRequest,
  type WorkerResponse,
} from '../domain/worker-protocol.js';
import type {
  AudioEmbedOutcome,
  AudioWorkerRequest,
  AudioWorkerResponse,
  MarkLumaOutcome,
  VideoWorkerRequest,
  VideoWorkerResponse,
} from '../domain/worker-protocol.js';
import type { PcmAudio } from '../domain/audio/apply.js';
import type { AudioMarkAlgorithm } from '../domain/audio-tasks.js';
import { CAIRN_AUDIO_WM_V3_NAME } from '../domain/audio/cairn-audio-wm-v3.js';

/** Where a worker's code is: a module file, or (eval) a bootstrap script that loads one. */
export interface WorkerEntry {
  readonly code: URL | string;
  readonly eval: boolean;
}

/**
 * The worker entry for the code that is running. From the bundle (dist/main.js) it is dist/worker.js beside
 * it, a second entry of the build. From the TypeScript sources (jest, `pnpm dev`) it is src/adapters/worker.ts, and a
 * worker thread inherits neither jest's transform nor tsx's hooks (Node 20 ignores `--import` hooks in
 * workers), so a bootstrap registers tsx inside the worker first.
 */
export function resolveWorkerEntry(from: string = import.meta.url): WorkerEntry {
  if (from.endsWith('.ts')) {
    const target = new URL('./worker.ts', from).href;
    const tsx = tsxEsmApi(from);
    return {
      code: `import(${JSON.stringify(tsx)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(target)}); });`,
      eval: true,
    };
  }
  const url = new URL('./worker.js', from);
  if (!existsSync(url)) {
    throw new Error(
      `watermark worker entry missing: ${fileURLToPath(url)} (the build must bundle services/watermark/src/adapters/worker.ts to dist/worker.js)`,
    );
  }
  return { code: url, eval: false };
}

/** File URL of tsx's ESM API (`tsx/esm/api`, import condition), looked up from `from` like an import would. */
function tsxEsmApi(from: string): string {
  const packageJson = createRequire(from).resolve('tsx/package.json');
  const manifest = JSON.parse(readFileSync(packageJson, 'utf8')) as {
    exports?: Record<string, { import?: { default?: string } }>;
  };
  const entry = manifest.exports?.['./esm/api']?.import?.default;
  if (!entry) throw new Error('tsx/esm/api not found: running the watermark worker from TypeScript sources needs tsx');
  return pathToFileURL(join(dirname(packageJson), entry)).href;
}

/**
 * One worker per CPU the container may use (its cgroup CPU limit, else the cores). Not cores − 1: the service's main
 * thread mostly waits (sharp decodes and encodes on libuv's threads), and with one worker on two cores an embed
 * queued behind a detection (a verify, or the stored verdict every sign triggers) although a core was free.
 * pnpm bench:sign-verify --set WATERMARK_WORKERS=1 compares.
 */
export function defaultPoolSize(): number {
  return poolSizeFromCgroup().size;
}

/** Which of the pool's workers a task runs on: the foreground ones, or the one low-priority background worker. */

/** What the pool tells a worker when it starts it (worker.ts reads it as workerData). */
export interface WorkerSetup {
  /** Lower the worker thread's own scheduling priority (nice 19) before it takes work. */
  readonly lowPriority: boolean;
}

export { PoolClosedError };

interface Task {
  readonly request: AnyRequest;
  readonly transfer: ArrayBuffer[];
  resolve(response: AnyResponse): void;
  reject(error: Error): void;
}

interface Slot {
  readonly worker: Worker;
  readonly lane: Lane;
  readonly ready: Promise<void>;
  task: Task | null;
}

export interface PoolOptions {
  readonly size: number;
  readonly entry?: WorkerEntry;
}

/**
 * A fixed set of worker threads for embedding and detection, which take hundreds of milliseconds of CPU on
 * large images: on the main thread they would stall every other call, health checks included. One task per
 * worker at a time, the rest queued in arrival order. A worker that dies fails only its own task and is
 * replaced when the next task needs it.
 *
 * Besides the `size` foreground workers, one background worker runs at the lowest scheduling priority (nice 19)
 * and takes only background detections, one at a time: work nobody waits on (the verifier's stored verdict of
 * each new asset, a whole detection per sign) then neither queues ahead of an embed nor takes the CPU from one.
 */
export class ImageWorkerPool implements WorkerPool {
  readonly size: number;
  private readonly entry: WorkerEntry;
  private readonly slots = new Set<Slot>();
  private readonly queues: Record<Lane, Task[]> = { foreground: [], background: [] };
  private nextId = 1;
  private closed = false;
  private idleWaiters: Array<() => void> = [];

  constructor(options: PoolOptions) {
    if (!Number.isInteger(options.size) || options.size < 1)
      throw new Error(`pool size must be a positive integer, got ${options.size}`);
    this.size = options.size;
    this.entry = options.entry ?? resolveWorkerEntry();
    // Started up front: a missing or broken worker shows at start-up, and the first request pays no start.
    for (let i = 0; i < this.size; i++) this.spawn('foreground');
    this.spawn('background');
  }

  /** Resolves once every worker has loaded its code (rejects if one fails to). */
  async ready(): Promise<void> {
    await Promise.all([...this.slots].map((slot) => slot.ready));
  }

  /**
   * Marks a copy of `image`. The pixel buffer is handed to the worker when `image.pixels` is exactly its
   * ArrayBuffer (which is then detached: the caller gives it up); otherwise it is copied once. With `key`, the
   * mark is `algorithm` under it (cairn-dct-keyed-v1 unless named); without, the keyless cairn-dct-v1.
   */
  async embed(
    image: RawImage,
    payload: Uint8Array,
    key?: WatermarkKey,
    algorithm?: KeyedAlgorithmName,
    level: number | 'content' = 0,
  ): Promise<EmbedOutcome> {
    return this.run({
      op: 'embed',
      image: { ...image, pixels: owned(image.pixels) },
      payload: Uint8Array.from(payload),
      ...(key ? { key } : {}),
      ...(algorithm ? { algorithm } : {}),
      ...(level ? { level } : {}),
    });
  }

  /**
   * Reads the mark of `image` under each of `keys`, then keyless, with the same buffer hand-over as embed;
   * cairn-sync-v2 on each of `syncGridAreas` (an image's grid when not named). In the background lane it runs on
   * the low-priority worker (same algorithm, same answer), after the background detections before it.
   */
  async detect(
    image: RawImage,
    keys: ReadonlyArray<WatermarkKey> = [],
    syncGridAreas?: ReadonlyArray<number>,
    lane: Lane = 'foreground',
  ): Promise<DetectOutcome> {
    return this.search(image, keys, syncGridAreas ? { syncGridAreas } : {}, lane);
  }

  /** Reads the cairn-sync-v2 mark just written under `key` (the v1 marks are not tried), with detect's hand-over. */
  readBack(image: RawImage, key: WatermarkKey): Promise<DetectOutcome> {
    return this.search(image, [key], { syncOnly: true }, 'foreground');
  }

  private async search(
    image: RawImage,
    keys: ReadonlyArray<WatermarkKey>,
    scope: { syncGridAreas?: ReadonlyArray<number>; syncOnly?: boolean },
    lane: Lane,
  ): Promise<DetectOutcome> {
    return this.run({ op: 'detect', image: { ...image, pixels: owned(image.pixels) }, keys, ...scope }, lane);
  }

  /**
   * Marks `audio` with `algorithm` (new marks: cairn-audio-wm-v3) under `key`; its sample buffer is handed over (or
   * copied once) like pixels, and the marked samples come back the same way.
   */
  async embedAudio(
    audio: PcmAudio,
    payload: Uint8Array,
    key: WatermarkKey,
    algorithm: AudioMarkAlgorithm = CAIRN_AUDIO_WM_V3_NAME,
  ): Promise<AudioEmbedOutcome> {
    return this.run({
      op: 'embed-audio',
      audio: { ...audio, samples: ownedFloats(audio.samples) },
      payload: Uint8Array.from(payload),
      key,
      algorithm,
    });
  }

  /** Reads a cairn-audio-wm-v3 or v1 mark from the 16 kHz mono mix under each of `keys`, in order. */
  async detectAudio(samples: Float32Array, keys: ReadonlyArray<WatermarkKey>): Promise<DetectOutcome> {
    return this.run({ op: 'detect-audio', samples: ownedFloats(samples), keys });
  }

  /**
   * Marks one video frame's luma plane (the first width × height bytes of `frame`) with the cairn-sync-v2 tile of
   * `payload` under `key`; the buffer is handed over (or copied once) and comes back marked.
   */
  async markLuma(
    frame: Uint8Array,
    size: { width: number; height: number },
    payload: Uint8Array,
    key: WatermarkKey,
    strengthRms: number,
  ): Promise<MarkLumaOutcome> {
    return this.run({
      op: 'mark-luma',
      frame: owned(frame),
      width: size.width,
      height: size.height,
      payload: Uint8Array.from(payload),
      key,
      strengthRms,
    });
  }

  /** Tasks waiting or running, in both lanes. */
  get pending(): number {
    let running = 0;
    for (const slot of this.slots) if (slot.task) running++;
    return running + this.queues.foreground.length + this.queues.background.length;
  }

  /**
   * Stops taking work, lets queued and running tasks finish for up to `graceMs`, then stops the workers
   * (whatever is still unfinished fails with PoolClosedError).
   */
  async close(graceMs = 10_000): Promise<void> {
    this.closed = true;
    if (this.pending > 0) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        new Promise<void>((resolve) => this.idleWaiters.push(resolve)),
        new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs))),
      ]);
      clearTimeout(timer);
    }
    for (const queue of Object.values(this.queues))
      for (const task of queue.splice(0)) task.reject(new PoolClosedError());
    await Promise.all([...this.slots].map((slot) => slot.worker.terminate()));
  }

  /** Queues `task`, numbered, and answers its outcome (a worker's failure thrown as workerFailure makes it). */
  private run<T extends Unnumbered>(task: T, lane: Lane = 'foreground'): Promise<OutcomeOf<T>> {
    if (this.closed) return Promise.reject(new PoolClosedError());
    // Every member of AnyRequest is its Unnumbered form with an id.
    const request = { id: this.nextId++, ...task } as AnyRequest;
    const transfer = transferable(bytesOfRequest(request));
    return new Promise<AnyResponse>((resolve, reject) => {
      this.queues[lane].push({ request, transfer, resolve, reject });
      this.dispatch();
    }).then((response): OutcomeOf<T> => {
      if (!response.ok) throw workerFailure(response.error);
      if (response.op !== request.op) throw new Error(`watermark worker answered ${response.op} to ${request.op}`);
      return response.outcome as OutcomeOf<T>;
    });
  }

  private dispatch(): void {
    for (const lane of ['foreground', 'background'] as const) this.dispatchLane(lane);
  }

  private dispatchLane(lane: Lane): void {
    const queue = this.queues[lane];
    const workers = lane === 'foreground' ? this.size : 1;
    while (queue.length > 0) {
      const own = [...this.slots].filter((s) => s.lane === lane);
      let slot = own.find((s) => s.task === null);
      if (!slot && own.length < workers && !this.closed) slot = this.spawn(lane);
      if (!slot) return;
      const task = queue.shift()!;
      slot.task = task;
      slot.worker.ref();
      try {
        slot.worker.postMessage(task.request, movable(task.transfer));
      } catch (error) {
        slot.task = null;
        slot.worker.unref();
        task.reject(error instanceof Error ? error : new Error(String(error)));
      }
    }
  }

  private spawn(lane: Lane): Slot {
    const setup: WorkerSetup = { lowPriority: lane === 'background' };
    const worker = new Worker(this.entry.code, {
      eval: this.entry.eval,
      name: lane === 'background' ? 'cairn-watermark-background' : 'cairn-watermark',
      workerData: setup,
    });
    let loaded: () => void = () => undefined;
    let failed: (error: Error) => void = () => undefined;
    const ready = new Promise<void>((resolve, reject) => {
      loaded = resolve;
      failed = reject;
    });
    ready.catch(() => undefined); // observed through ready() or the task that fails; never unhandled
    const slot: Slot = { worker, lane, ready, task: null };
    this.slots.add(slot);
    // Idle workers do not keep the process alive; a busy one does until its answer is in.
    worker.unref();

    const finish = (settle: (task: Task) => void) => {
      const task = slot.task;
      slot.task = null;
      worker.unref();
      if (task) settle(task);
      if (this.pending === 0) for (const wake of this.idleWaiters.splice(0)) wake();
    };
    worker.on('message', (message: AnyResponse | typeof WORKER_READY) => {
      if (message === WORKER_READY) return loaded();
      finish((task) => task.resolve(message));
      this.dispatch();
    });
    worker.on('error', (error: Error) => {
      failed(error);
      finish((task) => task.reject(new Error(`image worker crashed: ${error.message}`, { cause: error })));
    });
    worker.on('exit', (code) => {
      this.slots.delete(slot);
      failed(new Error(`image worker exited with code ${code} before it was ready`));
      finish((task) =>
        task.reject(this.closed ? new PoolClosedError() : new Error(`image worker exited with code ${code}`)),
      );
      if (!this.closed) this.dispatch();
    });
    return slot;
  }
}

type AnyRequest = WorkerRequest | AudioWorkerRequest | VideoWorkerRequest;
type AnyResponse = WorkerResponse | AudioWorkerResponse | VideoWorkerResponse;
/** Each operation's outcome, as its successful answer carries it. */
type Outcomes = { [A in Extract<AnyResponse, { ok: true }> as A['op']]: A['outcome'] };
type OutcomeOf<T extends Unnumbered> = Outcomes[T['op']];
/** A request as a method words it; run() gives it its id. */
type Unnumbered = AnyRequest extends infer R ? (R extends AnyRequest ? Omit<R, 'id'> : never) : never;

/** The buffer a request may hand over: its pixels or its samples. */
function bytesOfRequest(request: AnyRequest): Uint8Array {
  if (request.op === 'mark-luma') return request.frame;
  if (request.op === 'embed-audio')
    return new Uint8Array(
      request.audio.samples.buffer,
      request.audio.samples.byteOffset,
      request.audio.samples.byteLength,
    );
  if (request.op === 'detect-audio')
    return new Uint8Array(request.samples.buffer, request.samples.byteOffset, request.samples.byteLength);
  return request.image.pixels;
}

/** Samples that own their whole buffer (see owned). */
function ownedFloats(samples: Float32Array): Float32Array {
  return samples.byteOffset === 0 &&
    samples.byteLength === samples.buffer.byteLength &&
    samples.buffer instanceof ArrayBuffer
    ? samples
    : samples.slice();
}

/** A view that owns its whole buffer, so it can be transferred without detaching anyone else's bytes. */
function owned(bytes: Uint8Array): Uint8Array {
  return transferable(bytes).length > 0 ? bytes : bytes.slice();
}

function workerFailure(error: { name: string; message: string }): Error {
  if (error.name === 'ImageRejectedError') return new ImageRejectedError(error.message);
  return new Error(`image worker failed: ${error.name}: ${error.message}`);
}
