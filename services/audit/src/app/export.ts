import type { Database } from '@cairn/db';
import type { Logger } from '@cairn/logging';
import { ndjsonLine, windowKey } from '../domain/export-window.js';
import type { ChainEntries, ExportConfigs, ExportSinks } from './ports.js';

/** At most this many windows per tenant per pass (a tenant catching up after downtime advances steadily). */
const MAX_WINDOWS_PER_PASS = 96;

export interface ExporterDeps {
  db: Database;
  logger: Logger;
  windowSeconds: number;
  graceSeconds: number;
  entries: ChainEntries;
  exportConfigs: ExportConfigs;
  sinks: ExportSinks;
  now?: () => Date;
}

export type WindowOutcome = { written: false } | { written: true; key: string; entries: number; alreadyThere: boolean };

/**
 * Claims the tenant's next closed window (row lock on its export config, skipped when another exporter holds it),
 * writes it, and advances exported_until in the same transaction: a window is written once. Should the process die
 * between the write and the commit, the retry finds the file already there (the sinks never overwrite) and only
 * advances.
 */
export async function exportNextWindow(deps: ExporterDeps, tenantId: string): Promise<WindowOutcome> {
  const now = deps.now?.() ?? new Date();
  const outcome = await deps.exportConfigs.withClaimedExportConfig(
    deps.db,
    tenantId,
    async (config, tx): Promise<WindowOutcome> => {
      const start = config.exportedUntil;
      const end = new Date(start.getTime() + deps.windowSeconds * 1000);
      if (end.getTime() + deps.graceSeconds * 1000 > now.getTime()) return { written: false };
      const rows = await deps.entries.entriesRecordedIn(tx, tenantId, start, end);
      const key = windowKey(config.prefix, start, end, deps.windowSeconds);
      const sink = await deps.sinks.open(tenantId, config);
      let written;
      try {
        written = await sink.writeOnce(key, rows.map(ndjsonLine).join(''));
      } finally {
        sink.close();
      }
      await deps.exportConfigs.advanceExport(tx, tenantId, end, now);
      return { written: true, key, entries: rows.length, alreadyThere: written === 'exists' };
    },
  );
  return outcome ?? { written: false };
}

/** One pass of the exporter: every configured tenant, each closed window not yet written, oldest first. */
export async function exportDueWindows(deps: ExporterDeps): Promise<number> {
  let written = 0;
  for (const tenantId of await deps.exportConfigs.exportingTenants(deps.db)) {
    try {
      for (let i = 0; i < MAX_WINDOWS_PER_PASS; i++) {
        const outcome = await exportNextWindow(deps, tenantId);
        if (!outcome.written) break;
        written++;
        deps.logger.debug(
          { tenant_id: tenantId, key: outcome.key, entries: outcome.entries, already_there: outcome.alreadyThere },
          'audit export window written',
        );
      }
    } catch (error) {
      deps.logger.error({ err: error, tenant_id: tenantId }, 'audit export failed for a tenant');
      const message = deps.sinks.failureText(error).slice(0, 500);
      // Recording lastError is best effort: the failure is logged just above.
      await deps.exportConfigs.recordExportError(deps.db, tenantId, message).catch(() => undefined);
    }
  }
  return written;
}
