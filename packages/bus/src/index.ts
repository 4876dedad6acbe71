export { Bus, type BusOptions, type ConsumerOptions, type RunningConsumer } from './bus.js';
export { idempotentHandler, type DedupeStore } from './idempotent.js';
export { injectTraceHeaders, extractTraceContext, newHeaders } from './tracing.js';
export { WorkQueue, WorkQueueFullError, type WorkHandlerContext } from './work-queue.js';
export {
  DEFAULT_STREAM_LIMITS,
  StreamSettingsError,
  limitSettings,
  type StreamLimits,
  type StreamRole,
} from './streams.js';
export {
  EVENT_PUBLISHERS,
  inboxPrefix,
  natsAuthorizationConfig,
  natsPasswordVar,
  natsPermissions,
  type NatsPermissions,
  type StreamNames,
} from './permissions.js';
