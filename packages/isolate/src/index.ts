export {
  childEntryBeside,
  WorkerPool,
  WorkerCrashedError,
  WorkerTimeoutError,
  WorkerUnavailableError,
  TaskFailedError,
  type WorkerPoolOptions,
  type RunOptions,
} from './pool.js';
export { asBuffer } from './protocol.js';
