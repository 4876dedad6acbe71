/**
 * Worker-thread entry of the image pool (worker-pool.ts, beside it). A separate bundle entry: the build turns this
 * file into dist/worker.js next to dist/main.js. It imports only the algorithm, never the service's
 * infrastructure, so a worker starts in milliseconds and holds no connections.
 */
import { readFileSync } from 'node:fs';
import { constants, setPriority } from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { AudioAlgorithms, runAudioTask } from '../domain/audio-tasks.js';
import { ImageAlgorithms, runImageTask } from '../domain/image-tasks.js';
import { runVideoTask, VideoMarkers } from '../domain/video-tasks.js';
import {
  isAudioRequest,
  isVideoRequest,
  WORKER_READY,
  type AudioWorkerRequest,
  type VideoWorkerRequest,
  type WorkerRequest,
} from '../domain/worker-protocol.js';
import { movable } from './transfer.js';

const port = parentPort;
if (!port) throw new Error('src/adapters/worker.ts must run as a worker thread');

/**
 * The pool's background worker (worker-pool.ts, WorkerSetup) yields the CPU to every other thread: this thread
 * only, at nice 19. Linux schedules threads, and setpriority names one by its thread id (the process id would be
 * the main thread's). Where /proc is missing the lane still keeps background work off the foreground workers.
 */
function lowerOwnPriority(): void {
  try {
    const threadId = Number(readFileSync('/proc/thread-self/stat', 'utf8').split(' ', 1)[0]);
    if (Number.isInteger(threadId) && threadId > 0) setPriority(threadId, constants.priority.PRIORITY_LOW);
  } catch {
    // Not Linux: no per-thread priority to set.
  }
}
if ((workerData as { lowPriority?: boolean } | null)?.lowPriority === true) lowerOwnPriority();

const algorithms = new ImageAlgorithms();
const audio = new AudioAlgorithms();
const video = new VideoMarkers();
port.on('message', (request: WorkerRequest | AudioWorkerRequest | VideoWorkerRequest) => {
  // An image's pixels arrive as a transfer or a structured copy, this thread's alone: an embed marks them in place.
  const { response, transfer } = isVideoRequest(request)
    ? runVideoTask(video, request)
    : isAudioRequest(request)
      ? runAudioTask(audio, request)
      : runImageTask(algorithms, request, { pixelsOwned: true });
  port.postMessage(response, movable(transfer));
});
port.postMessage(WORKER_READY);
