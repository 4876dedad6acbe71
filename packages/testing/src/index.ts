export { createSandbox, freePort, PG_ADMIN_URL, APP_ROLE, REDIS_URL, NATS_URL, type Sandbox } from './env.js';
export {
  ensureAppRole,
  databaseExists,
  createDatabase,
  dropDatabase,
  databaseUrl,
  provisionServiceRoles,
  type ServiceIdentity,
} from './provisioning.js';
export { apiRequester, type ApiRequest, type ApiRequestInit } from './http.js';
export { startHardhat, REPO_ROOT, type HardhatNode } from './hardhat.js';
export { waitFor } from './wait.js';
export { listening, startPrivateNats, startPrivateRedis, type PrivateServer } from './servers.js';
export { makeDevPki, type TlsFiles } from './tls.js';
export { SHARED_DIR } from './shared.js';
export { sampleEvent } from './events.js';
export { writeMigrations } from './migrations.js';
export { wavOf } from './wav.js';
