import { fileURLToPath } from 'node:url';
import { auditV1, tenantV1 } from '@cairn/proto';
import { every, defineService } from '@cairn/runtime';
import { auditConfigShape, auditExportDir } from './config.js';
import { assertTenantEndpoint, credentialsFromEnv, openSink, tenantFacingError } from './adapters/sinks.js';
import { AuditLog } from './app/audit-log.js';
import { exportDueWindows } from './app/export.js';
import { purgeAllExpired } from './app/retention.js';
import { AUDIT_LOG_CONSUMER, AUDIT_LOG_TYPES, auditLogHandler } from './events.js';
import type { AuditPorts } from './app/ports.js';
import { auditHandlers } from './rpc.js';
import * as entries from './store/entries.js';
import * as exportConfigs from './store/export-configs.js';

export const migrationsFolder = fileURLToPath(new URL('./db/migrations', import.meta.url));

export const auditService = defineService('audit', auditConfigShape, migrationsFolder, async (ctx, env) => {
  const { config, logger } = ctx;
  const production = config.CAIRN_ENV === 'production';
  const exportDir = auditExportDir(config);
  const sinkEnvironment = { exportDir, production, credentials: credentialsFromEnv(env) };
  const ports: AuditPorts = {
    entries,
    exportConfigs,
    sinks: {
      open: (tenantId, settings) => openSink(tenantId, settings, sinkEnvironment),
      failureText: tenantFacingError,
      assertTenantEndpoint,
    },
  };
  const log = new AuditLog(ctx.db, ports, { production, exportWindowSeconds: config.AUDIT_EXPORT_WINDOW_SECONDS });
  ctx.rpc.add(auditV1.AuditService, auditHandlers(log));
  await ctx.consume(AUDIT_LOG_CONSUMER, AUDIT_LOG_TYPES, auditLogHandler(entries));

  const onError = (what: string) => (error: unknown) => logger.error({ err: error }, `${what} failed`);
  const tenants = ctx.client(tenantV1.TenantService, 'tenant');
  const stopPurge = every(
    config.AUDIT_PURGE_INTERVAL_MS,
    () => purgeAllExpired({ db: ctx.db, entries, tenants, logger }),
    onError('audit retention purge'),
  );
  const stopExport = every(
    config.AUDIT_EXPORT_INTERVAL_MS,
    () =>
      exportDueWindows({
        db: ctx.db,
        logger,
        windowSeconds: config.AUDIT_EXPORT_WINDOW_SECONDS,
        graceSeconds: config.AUDIT_EXPORT_GRACE_SECONDS,
        entries,
        exportConfigs,
        sinks: ports.sinks,
      }),
    onError('audit export'),
  );
  ctx.onShutdown(stopPurge);
  ctx.onShutdown(stopExport);
});
