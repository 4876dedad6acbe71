import * as workerThreads from 'node:worker_threads';

/**
 * Node ≥ 21 refuses (DataCloneError) to transfer an ArrayBuffer that native code marked untransferable, as sharp's
 * decoded pixels are; Node 20 copied such a buffer silently and has no way to ask (nor the function).
 */
const isUntransferable = (workerThreads as { isMarkedAsUntransferable?: (value: object) => boolean })
  .isMarkedAsUntransferable;

/** The buffers of `transfer` postMessage may move; the others are copied with the message instead. */
export function movable(transfer: readonly ArrayBuffer[]): ArrayBuffer[] {
  return isUntransferable ? transfer.filter((buffer) => !isUntransferable(buffer)) : [...transfer];
}
