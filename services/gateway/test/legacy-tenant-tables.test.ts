/**
 * The tables an older gateway kept tenants in (before the tenant service) are dropped by this release's migration,
 * but never with a tenant in them: the import that moved them is the previous release's command, so a schema still
 * holding one fails the migration (the gateway does not start), says what to run, and keeps the row.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type pg from 'pg';
import { createPool, migrateService } from '@cairn/db';
import { newId } from '@cairn/ids';
import { createSandbox, type Sandbox } from '@cairn/testing';
import { migrationsFolder } from '../src/service.js';

/** The last migration of the layout that still had the tenant tables. */
const LAST_LEGACY_TAG = '0009_tenant_handover';

let sandbox: Sandbox;
let legacyFolder: string;

/** The gateway's migrations up to LAST_LEGACY_TAG: the schema as the release before this one left it. */
async function legacyMigrations(): Promise<string> {
  const folder = await mkdtemp(join(tmpdir(), 'cairn-gateway-legacy-'));
  await cp(migrationsFolder, folder, { recursive: true });
  const journalPath = join(folder, 'meta', '_journal.json');
  const journal = JSON.parse(await readFile(journalPath, 'utf8')) as { entries: Array<{ idx: number; tag: string }> };
  const last = journal.entries.findIndex((e) => e.tag === LAST_LEGACY_TAG);
  expect(last).toBeGreaterThanOrEqual(0);
  journal.entries = journal.entries.slice(0, last + 1);
  await writeFile(journalPath, JSON.stringify(journal));
  return folder;
}

async function migrate(folder: string): Promise<void> {
  // As the services migrate: the app role owns the tables and is bound by their forced row-level security.
  const pool = createPool(sandbox.databaseUrl, 1);
  try {
    await migrateService(pool, 'gateway', folder);
  } finally {
    await pool.end();
  }
}

/** A query as the superuser, who sees past row-level security. */
async function asAdmin<R extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<R[]> {
  const admin = await sandbox.adminClient();
  try {
    return (await admin.query<R>(text, values)).rows;
  } finally {
    await admin.end();
  }
}

async function legacyTables(): Promise<string[]> {
  const rows = await asAdmin<{ name: string }>(
    `select table_name as name from information_schema.tables
      where table_schema = 'gateway' and table_name in ('tenants', 'api_keys', 'onboarding_requests', 'recipes')
      order by 1`,
  );
  return rows.map((r) => r.name);
}

beforeAll(async () => {
  sandbox = await createSandbox();
  legacyFolder = await legacyMigrations();
  await migrate(legacyFolder);
});

afterAll(async () => {
  await rm(legacyFolder, { recursive: true, force: true });
  await sandbox.dispose();
});

describe("the gateway schema's legacy tenant tables", () => {
  const tenantId = newId('tenant');

  it('are not dropped while they hold a tenant never imported: the migration fails, names the import, keeps the row', async () => {
    await asAdmin(
      `insert into gateway.tenants (tenant_id, name, plan, audit_retention_days, rate_limit_rps, rate_limit_daily)
       values ($1, 'Before the move', 'growth', 200, 50, 100000)`,
      [tenantId],
    );
    await expect(migrate(migrationsFolder)).rejects.toThrow(/import-gateway-tenants.*previous Cairn release/);
    expect(await legacyTables()).toEqual(['api_keys', 'onboarding_requests', 'recipes', 'tenants']);
    expect(await asAdmin('select tenant_id from gateway.tenants')).toEqual([{ tenant_id: tenantId }]);
  });

  it('are dropped once empty (imported), and the schema migrates to the end', async () => {
    await asAdmin('delete from gateway.tenants');
    await migrate(migrationsFolder);
    expect(await legacyTables()).toEqual([]);
  });
});
