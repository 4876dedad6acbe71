export { createPool, closePool, createDb, migrateService, pingDatabase } from './pool.js';
export {
  withTenant,
  rowOrNull,
  withRlsSettings,
  setTenant,
  tenantPredicate,
  tenantPolicy,
  type Database,
  type Tx,
  type RlsSettings,
} from './tenant.js';
export { processedEventsTable, outboxTable, claimEvent, pgDedupeStore } from './events.js';
export { JobRows, type JobTable } from './jobs.js';
export { assertRlsSubjectRole, currentRole, type DatabaseRole } from './role.js';
