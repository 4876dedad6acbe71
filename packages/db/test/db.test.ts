import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { sql } from 'drizzle-orm';
import type pg from 'pg';
import { createSandbox, writeMigrations, type Sandbox } from '@cairn/testing';
import { createDb, createPool, migrateService, withTenant, type Database } from '../src/index.js';

let sandbox: Sandbox;
let pool: pg.Pool;
let db: Database;

beforeAll(async () => {
  sandbox = await createSandbox();
  pool = createPool(sandbox.databaseUrl, 2);
  db = createDb(pool);
});
afterAll(async () => {
  await pool.end();
  await sandbox.dispose();
});

const currentTenant = async (run: (q: string) => Promise<{ rows: Array<{ t: string | null }> }>) =>
  (await run("select current_setting('cairn.tenant_id', true) as t")).rows[0]?.t ?? null;

describe('withTenant', () => {
  it('sets the tenant for the transaction only: pooled connections never inherit it', async () => {
    const inside = await withTenant(
      db,
      't_A',
      async (tx) =>
        (await tx.execute<{ t: string }>(sql`select current_setting('cairn.tenant_id', true) as t`)).rows[0]?.t,
    );
    expect(inside).toBe('t_A');
    // Both pooled connections, after the transaction: nothing set.
    const clients = await Promise.all([pool.connect(), pool.connect()]);
    try {
      for (const client of clients) expect(['', null]).toContain(await currentTenant((q) => client.query(q)));
    } finally {
      clients.forEach((c) => c.release());
    }
  });

  it('rolls back the setting with a failed transaction', async () => {
    await expect(withTenant(db, 't_B', async () => Promise.reject(new Error('fail')))).rejects.toThrow('fail');
    expect(['', null]).toContain(await currentTenant((q) => pool.query(q)));
  });
});

describe('migrateService', () => {
  it('applies a service’s migrations once even when replicas start together', async () => {
    const folder = await writeMigrations([
      'CREATE SCHEMA "probe";--> statement-breakpoint\nCREATE TABLE "probe"."things" ("id" text PRIMARY KEY);',
    ]);
    const pools = [
      createPool(sandbox.databaseUrl, 1),
      createPool(sandbox.databaseUrl, 1),
      createPool(sandbox.databaseUrl, 1),
    ];
    try {
      await Promise.all(pools.map((p) => migrateService(p, 'probe', folder)));
      await migrateService(pools[0]!, 'probe', folder);
      const applied = await pool.query<{ n: string }>('select count(*)::text as n from cairn_migrations.probe');
      expect(applied.rows[0]?.n).toBe('1');
      await pool.query("insert into probe.things values ('x')");
    } finally {
      await Promise.all(pools.map((p) => p.end()));
    }
  });
});
