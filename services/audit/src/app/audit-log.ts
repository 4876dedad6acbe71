import type { Database } from '@cairn/db';
import { verifyChain, type ChainVerdict } from './chain.js';
import { deleteExportConfig, setExportConfig, type ExportConfigOptions } from './export-config.js';
import type { ExportSettingsInput } from '../domain/export-settings.js';
import type { AuditPorts, EntryFilter, EntryRow, ExportConfigRow } from './ports.js';
import { purgeExpired } from './retention.js';

export type { ChainVerdict, EntryFilter, EntryRow, ExportConfigOptions, ExportConfigRow };

/** One tenant's audit log as the AuditService serves it (every query scoped to that tenant). */
export class AuditLog {
  constructor(
    private readonly db: Database,
    private readonly ports: AuditPorts,
    private readonly options: ExportConfigOptions,
  ) {}

  entries(tenantId: string, filter: EntryFilter, limit: number): Promise<EntryRow[]> {
    return this.ports.entries.listEntries(this.db, tenantId, filter, limit);
  }

  verify(tenantId: string): Promise<ChainVerdict> {
    return verifyChain(this.ports.entries, this.db, tenantId);
  }

  purge(tenantId: string, retentionDays: number): Promise<{ purged: number; checkpointSeq: number }> {
    return purgeExpired(this.ports.entries, this.db, tenantId, retentionDays);
  }

  setExport(tenantId: string, input: ExportSettingsInput, actorKeyId: string | null = null): Promise<ExportConfigRow> {
    return setExportConfig(this.ports, this.db, tenantId, input, this.options, actorKeyId);
  }

  getExport(tenantId: string): Promise<ExportConfigRow | undefined> {
    return this.ports.exportConfigs.getExportConfig(this.db, tenantId);
  }

  deleteExport(tenantId: string, actorKeyId: string | null = null): Promise<boolean> {
    return deleteExportConfig(this.ports, this.db, tenantId, actorKeyId);
  }
}
