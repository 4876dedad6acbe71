import type { Database, Tx } from '@cairn/db';
import { newEvent } from '@cairn/events';
import { validateSettings, type ExportSettingsInput } from '../domain/export-settings.js';
import { windowStart } from '../domain/export-window.js';
import { recordEvent } from './chain.js';
import type { AuditPorts, ChainEntries, ExportConfigRow } from './ports.js';

export type { ExportConfigRow };

export interface ExportConfigOptions {
  /** CAIRN_ENV = production: export endpoints must be https. */
  production: boolean;
  /** AUDIT_EXPORT_WINDOW_SECONDS: a new export starts with the window in progress. */
  exportWindowSeconds: number;
}

/** A destination as its audit entry shows it (no secret is stored with it: S3 access comes from a role). */
function destination(row: ExportConfigRow | undefined): Record<string, unknown> | null {
  if (!row) return null;
  return {
    sink: row.sink,
    bucket: row.bucket,
    prefix: row.prefix,
    region: row.region,
    endpoint: row.endpoint,
    role_arn: row.roleArn,
    path: row.path,
  };
}

/**
 * The audit service owns both the destination and the chain, so the change's entry is appended to the chain in
 * the transaction that changes the destination, not sent through the bus: it commits with the change or not at all.
 */
function auditChange(
  entries: ChainEntries,
  tenantId: string,
  actorKeyId: string | null,
  action: 'audit_export.set' | 'audit_export.deleted',
) {
  return async (tx: Tx, before: ExportConfigRow | undefined, after: ExportConfigRow | undefined): Promise<void> => {
    const event = newEvent('admin.changed', tenantId, {
      action,
      object_type: 'audit_export',
      object_id: tenantId,
      actor_key_id: actorKeyId,
      before: destination(before),
      after: destination(after),
    });
    await recordEvent(entries, event, tx);
  };
}

/** A tenant's export destination: validated, then stored (a changed destination keeps its position). */
export async function setExportConfig(
  ports: AuditPorts,
  db: Database,
  tenantId: string,
  input: ExportSettingsInput,
  options: ExportConfigOptions,
  actorKeyId: string | null = null,
): Promise<ExportConfigRow> {
  const settings = validateSettings(input, options.production);
  ports.sinks.assertTenantEndpoint(settings.endpoint, options.production);
  const now = new Date();
  return ports.exportConfigs.upsertExportConfig(
    db,
    tenantId,
    settings,
    windowStart(now, options.exportWindowSeconds),
    now,
    auditChange(ports.entries, tenantId, actorKeyId, 'audit_export.set'),
  );
}

export function deleteExportConfig(
  ports: AuditPorts,
  db: Database,
  tenantId: string,
  actorKeyId: string | null = null,
): Promise<boolean> {
  return ports.exportConfigs.deleteExportConfig(
    db,
    tenantId,
    auditChange(ports.entries, tenantId, actorKeyId, 'audit_export.deleted'),
  );
}
