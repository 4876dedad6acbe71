export { loadConfig, commonEnvShape, ConfigError, identityProblems, isLoopbackHost, type CommonEnv } from './load.js';
export { publicUrlProblem, publicUrlSetting, publicUrlProblems } from './public-url.js';
export { storedManifestConfigShape } from './stored-manifests.js';
export { positiveIntSetting } from './settings.js';
export { publicUrl, manifestUrl, verifierPageUrl, assetContentUrl, jobUrl, docsUrl } from './public-links.js';
export {
  SERVICE_NAMES,
  DEFAULT_PORTS,
  DEFAULT_GATEWAY_HTTP_PORT,
  SERVICE_NODE_FLAGS,
  grpcAddrVar,
  databaseRole,
  type ServiceName,
  type ServicePorts,
} from './fleet.js';
