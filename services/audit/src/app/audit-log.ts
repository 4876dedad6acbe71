import type { Database } from '@cairn/db';
import { listEntries, verifyChain, type ChainVerdict, type EntryFilter, type EntryRow } from './chain.js';
import {
  deleteExportConfig,
  getExportConfig,
  setExportConfig,
  type ExportConfigOptions,
  type ExportConfigRow,
} from './export-config.js';
import type { ExportSettingsInput } from '../domain/export-settings.js';
import { purgeExpired } from './retention.js';

export type { ChainVerdict, EntryFilter, EntryRow, ExportConfigOptions, ExportConfigRow };

/** One tenant's audit log as the AuditService serves it (every query scoped to that tenant). */
export class AuditLog {
  constructor(
    private readonly db: Database,
    private readonly options: ExportConfigOptions,
  ) {}

  entries(tenantId: string, filter: EntryFilter, limit: number): Promise<EntryRow[]> {
    return listEntries(this.db, tenantId, filter, limit);
  }

  verify(tenantId: string): Promise<ChainVerdict> {
    return verifyChain(this.db, tenantId);
  }

  purge(tenantId: string, retentionDays: number): Promise<{ purged: number; checkpointSeq: number }> {
    return purgeExpired(this.db, tenantId, retentionDays);
  }

  setExport(tenantId: string, input: ExportSettingsInput, actorKeyId: string | null = null): Promise<ExportConfigRow> {
    return setExportConfig(this.db, tenantId, input, this.options, actorKeyId);
  }

  getExport(tenantId: string): Promise<ExportConfigRow | undefined> {
    return getExportConfig(this.db, tenantId);
  }

  deleteExport(tenantId: string, actorKeyId: string | null = null): Promise<boolean> {
    return deleteExportConfig(this.db, tenantId, actorKeyId);
  }
}
