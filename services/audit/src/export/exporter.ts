import { and, asc, eq, gte, lt, sql } from 'drizzle-orm';
import { withTenant, type Database } from '@cairn/db';
import type { Logger } from '@cairn/logging';
import { entries, exportConfigs } from '../db/schema.js';
import { openSink, type SinkEnvironment } from './sinks.js';

type EntryRow = typeof entries.$inferSelect;

/** At most this many windows per tenant per pass (a tenant catching up after downtime advances steadily). */
const MAX_WINDOWS_PER_PASS = 96;

export interface ExporterDeps {
  db: Database;
  logger: Logger;
  windowSeconds: number;
  graceSeconds: number;
  sinks: SinkEnvironment;
  now?: () => Date;
}

/** The start of the window containing `at` (windows are aligned on the epoch: 15-minute windows start at :00, :15, …). */
export function windowStart(at: Date, windowSeconds: number): Date {
  const ms = windowSeconds * 1000;
  return new Date(Math.floor(at.getTime() / ms) * ms);
}

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

/** `<prefix>/year=YYYY/month=MM/day=DD/HHMM-HHMM.ndjson` (UTC, day of the window start; HHMMSS when windows are not whole minutes). */
export function windowKey(prefix: string | null, start: Date, end: Date, windowSeconds: number): string {
  const clock = (d: Date) =>
    `${pad(d.getUTCHours())}${pad(d.getUTCMinutes())}${windowSeconds % 60 === 0 ? '' : pad(d.getUTCSeconds())}`;
  const partition = `year=${start.getUTCFullYear()}/month=${pad(start.getUTCMonth() + 1)}/day=${pad(start.getUTCDate())}`;
  return `${prefix ? `${prefix}/` : ''}${partition}/${clock(start)}-${clock(end)}.ndjson`;
}

/** One NDJSON line per entry, the same fields GET /v1/audit returns. */
export function ndjsonLine(row: EntryRow): string {
  return `${JSON.stringify({
    entry_id: row.entryId,
    event_id: row.eventId,
    event_type: row.eventType,
    created_at: row.occurredAt.toISOString(),
    recorded_at: row.recordedAt.toISOString(),
    data: row.data,
    seq: row.seq,
    prev_hash: row.prevHash,
    hash: row.hash,
  })}\n`;
}

export async function exportingTenants(db: Database): Promise<string[]> {
  return db.transaction(async (tx) => {
    await tx.execute(sql`select set_config('cairn.system', 'audit-export', true)`);
    return (await tx.select({ tenantId: exportConfigs.tenantId }).from(exportConfigs)).map((r) => r.tenantId);
  });
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
  return withTenant(deps.db, tenantId, async (tx) => {
    const [config] = await tx
      .select()
      .from(exportConfigs)
      .where(eq(exportConfigs.tenantId, tenantId))
      .for('update', { skipLocked: true });
    if (!config) return { written: false };
    const start = config.exportedUntil;
    const end = new Date(start.getTime() + deps.windowSeconds * 1000);
    if (end.getTime() + deps.graceSeconds * 1000 > now.getTime()) return { written: false };
    const rows = await tx
      .select()
      .from(entries)
      .where(and(eq(entries.tenantId, tenantId), gte(entries.recordedAt, start), lt(entries.recordedAt, end)))
      .orderBy(asc(entries.seq));
    const key = windowKey(config.prefix, start, end, deps.windowSeconds);
    const sink = await openSink(tenantId, config, deps.sinks);
    let outcome;
    try {
      outcome = await sink.writeOnce(key, rows.map(ndjsonLine).join(''));
    } finally {
      sink.close();
    }
    await tx
      .update(exportConfigs)
      .set({ exportedUntil: end, lastError: null, updatedAt: now })
      .where(eq(exportConfigs.tenantId, tenantId));
    return { written: true, key, entries: rows.length, alreadyThere: outcome === 'exists' };
  });
}

/** One pass of the exporter: every configured tenant, each closed window not yet written, oldest first. */
export async function exportDueWindows(deps: ExporterDeps): Promise<number> {
  let written = 0;
  for (const tenantId of await exportingTenants(deps.db)) {
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
      const message = (error instanceof Error ? error.message : String(error)).slice(0, 500);
      await withTenant(deps.db, tenantId, (tx) =>
        tx.update(exportConfigs).set({ lastError: message }).where(eq(exportConfigs.tenantId, tenantId)),
      ).catch(() => undefined); // recording lastError is best effort: the failure is logged just above
    }
  }
  return written;
}
