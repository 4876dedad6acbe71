import type { Database } from '@cairn/db';
import { validateSettings, type ExportSettingsInput } from '../domain/export-settings.js';
import { windowStart } from '../domain/export-window.js';
import {
  deleteExportConfig,
  getExportConfig,
  upsertExportConfig,
  type ExportConfigRow,
} from '../store/export-configs.js';

export type { ExportConfigRow };

export interface ExportConfigOptions {
  /** CAIRN_ENV = production: export endpoints must be https. */
  production: boolean;
  /** AUDIT_EXPORT_WINDOW_SECONDS: a new export starts with the window in progress. */
  exportWindowSeconds: number;
}

/** A tenant's export destination: validated, then stored (a changed destination keeps its position). */
export async function setExportConfig(
  db: Database,
  tenantId: string,
  input: ExportSettingsInput,
  options: ExportConfigOptions,
): Promise<ExportConfigRow> {
  const settings = validateSettings(input, options.production);
  const now = new Date();
  return upsertExportConfig(db, tenantId, settings, windowStart(now, options.exportWindowSeconds), now);
}

export { deleteExportConfig, getExportConfig };
