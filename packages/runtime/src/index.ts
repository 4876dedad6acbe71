export {
  defineService,
  startService,
  runService,
  type ServiceContext,
  type ServiceDefinition,
  type RunningService,
  type ServiceConfig,
} from './service.js';
export { Outbox, type OutboxSweep } from './outbox.js';
export { Backoff, wakeableLoop, type WakeableLoop } from './backoff.js';
export { createOpsServer, listen, closeServer, type ReadinessReport } from './ops-server.js';
export { every } from './every.js';
export { ByteBoundedLru } from './byte-bounded-lru.js';
export { unqueued } from './unqueued.js';
export {
  JobRunner,
  TRANSIENT_JOB_ERRORS,
  type JobItem,
  type JobKind,
  type JobMark,
  type JobRecords,
  type JobRun,
  type JobRunnerDeps,
  type JobStatus,
} from './jobs.js';
