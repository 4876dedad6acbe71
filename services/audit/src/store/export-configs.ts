import { eq, sql } from 'drizzle-orm';
import { withTenant, type Database, type Tx } from '@cairn/db';
import type { ExportConfigChange, ExportConfigRow } from '../app/ports.js';
import { exportConfigs } from '../db/schema.js';
import type { ExportSettings } from '../domain/export-settings.js';

/** Creates the tenant's export destination, or changes it keeping its position (windows written stay written). */
export async function upsertExportConfig(
  db: Database,
  tenantId: string,
  settings: ExportSettings,
  exportedUntil: Date,
  now: Date,
  alsoInTx: ExportConfigChange,
): Promise<ExportConfigRow> {
  return withTenant(db, tenantId, async (tx) => {
    const before = await lockedConfig(tx, tenantId);
    const [row] = await tx
      .insert(exportConfigs)
      .values({ tenantId, ...settings, exportedUntil, createdAt: now, updatedAt: now })
      .onConflictDoUpdate({ target: exportConfigs.tenantId, set: { ...settings, lastError: null, updatedAt: now } })
      .returning();
    if (!row) throw new Error('export config upsert returned nothing');
    await alsoInTx(tx, before, row);
    return row;
  });
}

async function lockedConfig(tx: Tx, tenantId: string): Promise<ExportConfigRow | undefined> {
  const [row] = await tx.select().from(exportConfigs).where(eq(exportConfigs.tenantId, tenantId)).for('update');
  return row;
}

export async function getExportConfig(db: Database, tenantId: string): Promise<ExportConfigRow | undefined> {
  const [row] = await withTenant(db, tenantId, (tx) =>
    tx.select().from(exportConfigs).where(eq(exportConfigs.tenantId, tenantId)),
  );
  return row;
}

export async function deleteExportConfig(
  db: Database,
  tenantId: string,
  alsoInTx: ExportConfigChange,
): Promise<boolean> {
  return withTenant(db, tenantId, async (tx) => {
    const [deleted] = await tx.delete(exportConfigs).where(eq(exportConfigs.tenantId, tenantId)).returning();
    if (deleted) await alsoInTx(tx, deleted, undefined);
    return deleted !== undefined;
  });
}

export async function exportingTenants(db: Database): Promise<string[]> {
  return db.transaction(async (tx) => {
    await tx.execute(sql`select set_config('cairn.system', 'audit-export', true)`);
    return (await tx.select({ tenantId: exportConfigs.tenantId }).from(exportConfigs)).map((r) => r.tenantId);
  });
}

/**
 * Runs `fn` in a transaction of the tenant holding the row lock on its export config (undefined, without running
 * `fn`, when there is none or another exporter holds it).
 */
export async function withClaimedExportConfig<T>(
  db: Database,
  tenantId: string,
  fn: (config: ExportConfigRow, tx: Tx) => Promise<T>,
): Promise<T | undefined> {
  return withTenant(db, tenantId, async (tx) => {
    const [config] = await tx
      .select()
      .from(exportConfigs)
      .where(eq(exportConfigs.tenantId, tenantId))
      .for('update', { skipLocked: true });
    if (!config) return undefined;
    return fn(config, tx);
  });
}

export async function advanceExport(tx: Tx, tenantId: string, exportedUntil: Date, now: Date): Promise<void> {
  await tx
    .update(exportConfigs)
    .set({ exportedUntil, lastError: null, updatedAt: now })
    .where(eq(exportConfigs.tenantId, tenantId));
}

export async function recordExportError(db: Database, tenantId: string, message: string): Promise<void> {
  await withTenant(db, tenantId, (tx) =>
    tx.update(exportConfigs).set({ lastError: message }).where(eq(exportConfigs.tenantId, tenantId)),
  );
}
