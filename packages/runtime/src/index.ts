export {
  startService,
  runService,
  type ServiceContext,
  type ServiceDefinition,
  type RunningService,
  type ServiceConfig,
} from './service.js';
export { Outbox } from './outbox.js';
export { createOpsServer, listen, closeServer, type ReadinessReport } from './ops-server.js';
export { every } from './every.js';
export { ByteBoundedLru } from './byte-bounded-lru.js';
export { unqueued } from './unqueued.js';
