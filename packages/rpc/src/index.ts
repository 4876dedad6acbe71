export {
  RpcServer,
  DEFAULT_MAX_CONNECTION_AGE_MS,
  DEFAULT_MAX_CONNECTION_AGE_GRACE_MS,
  type ServiceImpl,
  type ImplOf,
  type CallContext,
  type ServerOptions,
} from './server.js';
export {
  createClient,
  ROUND_ROBIN,
  retrySafe,
  streamRetrySafe,
  type ServiceClient,
  type ClientOf,
  type MethodsOf,
  type CallOptions,
  type ClientOptions,
} from './client.js';
export { HealthState, ServingStatus } from './health.js';
export { toServiceError, fromServiceError, grpcStatusForCode, CODE_METADATA_KEY } from './status.js';
export { grpcServiceDefinition } from './definition.js';
export { readTlsFiles, serviceTlsName, serverCredentials, channelCredentials, type TlsMaterial } from './tls.js';
export { listByReflection, type ReflectedService } from './reflection.js';
