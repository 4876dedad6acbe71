import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { createSandbox, REPO_ROOT, type Sandbox } from '@cairn/testing';
import { createPool, migrateService } from '../src/index.js';

/**
 * Row-level security of every tenant-owned table of the fleet, at the database level. The list of tables is
 * read from the migrated database at test time (every table of a service schema with a `tenant_id` column),
 * not written down here, so a new tenant-owned table without forced RLS and a tenant policy fails this test.
 */

/** Tables whose tenant rows are opened by another key, not by `cairn.tenant_id` (see their policies). */
const OPENED_BY_OTHER_KEY: Record<string, string> = {
  'tenant.onboarding_requests':
    'cairn.idempotency_key: a signup is found by its idempotency key before any tenant exists',
};

interface Column {
  name: string;
  type: string;
  category: string;
  enumLabels: string[] | null;
}

interface Table {
  name: string;
  columns: Column[];
  forced: boolean;
  enabled: boolean;
}

let sandbox: Sandbox;
let admin: pg.Client;
let app: pg.Client;
let tables: Table[];
const A = `tenant_rls_a_${randomUUID().slice(0, 8)}`;
const B = `tenant_rls_b_${randomUUID().slice(0, 8)}`;
let counter = 1;

const serviceNames = readdirSync(join(REPO_ROOT, 'services')).filter((name) =>
  existsSync(join(REPO_ROOT, 'services', name, 'src/db/migrations')),
);

beforeAll(async () => {
  sandbox = await createSandbox();
  // Migrated as the app role, as the services do: it owns the tables, so only FORCE makes RLS apply to it.
  const pool = createPool(sandbox.databaseUrl, 1);
  try {
    for (const name of serviceNames)
      await migrateService(pool, name, join(REPO_ROOT, 'services', name, 'src/db/migrations'));
  } finally {
    await pool.end();
  }
  admin = await sandbox.adminClient();
  app = new pg.Client({ connectionString: sandbox.databaseUrl });
  await app.connect();
  tables = await tenantTables();
  for (const table of tables) {
    await seed(table, A);
    await seed(table, B);
  }
}, 120_000);

afterAll(async () => {
  await app?.end();
  await admin?.end();
  await sandbox?.dispose();
});

async function tenantTables(): Promise<Table[]> {
  const { rows } = await admin.query<{ name: string; enabled: boolean; forced: boolean; columns: Column[] }>(
    `select n.nspname || '.' || c.relname as name, c.relrowsecurity as enabled, c.relforcerowsecurity as forced,
            json_agg(json_build_object(
              'name', a.attname, 'type', format_type(a.atttypid, a.atttypmod), 'category', t.typcategory,
              'enumLabels', (select json_agg(e.enumlabel order by e.enumsortorder) from pg_enum e where e.enumtypid = t.oid)
            ) order by a.attnum) filter (where a.attnotnull and not a.atthasdef and a.attidentity = '' and a.attgenerated = '') as columns
       from pg_class c
       join pg_namespace n on n.oid = c.relnamespace
       join pg_attribute a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped
       join pg_type t on t.oid = a.atttypid
      where c.relkind in ('r', 'p') and n.nspname = any($1)
        and exists (select 1 from pg_attribute ta where ta.attrelid = c.oid and ta.attname = 'tenant_id' and not ta.attisdropped)
      group by n.nspname, c.relname, c.relrowsecurity, c.relforcerowsecurity
      order by 1`,
    [serviceNames],
  );
  return rows.map((r) => ({ ...r, columns: r.columns ?? [] }));
}

/** A value for a required column, as text the column's type parses: distinct per call where it may be a key. */
function valueFor(column: Column, tenantId: string): string {
  if (column.name === 'tenant_id') return tenantId;
  if (column.enumLabels?.length) return column.enumLabels[0]!;
  const n = counter++;
  switch (column.category) {
    case 'A':
      return '{}';
    case 'B':
      return 'false';
    case 'N':
      return String(n);
    case 'D':
      return new Date().toISOString();
    case 'S':
      return `rls_${column.name}_${n}_${randomUUID().slice(0, 8)}`;
    case 'V':
      return '0'.repeat(Number(/\((\d+)\)/.exec(column.type)?.[1] ?? 1));
  }
  if (column.type === 'jsonb' || column.type === 'json') return '{}';
  if (column.type === 'bytea') return '\\x00';
  if (column.type === 'uuid') return randomUUID();
  throw new Error(`no test value for ${column.name} ${column.type}: teach valueFor this type`);
}

function insertStatement(table: Table, tenantId: string): { text: string; values: string[] } {
  const columns = table.columns.some((c) => c.name === 'tenant_id')
    ? table.columns
    : [...table.columns, { name: 'tenant_id', type: 'text', category: 'S', enumLabels: null }];
  return {
    text: `insert into ${table.name} (${columns.map((c) => `"${c.name}"`).join(', ')}) values (${columns.map((c, i) => `$${i + 1}::${c.type}`).join(', ')})`,
    values: columns.map((c) => valueFor(c, tenantId)),
  };
}

/** One row of `tenantId` in `table`, written as the superuser with foreign keys off (the row's parents are not the point). */
async function seed(table: Table, tenantId: string): Promise<void> {
  await admin.query('begin');
  try {
    await admin.query("set local session_replication_role = 'replica'");
    const { text, values } = insertStatement(table, tenantId);
    await admin.query(text, values);
    await admin.query('commit');
  } catch (error) {
    await admin.query('rollback');
    throw new Error(`seeding ${table.name}: ${(error as Error).message}`);
  }
}

/** Runs `fn` as the service role with `cairn.tenant_id` = `tenantId`, in a transaction that is rolled back. */
async function asTenant<T>(tenantId: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  await app.query('begin');
  try {
    await app.query("select set_config('cairn.tenant_id', $1, true)", [tenantId]);
    return await fn(app);
  } finally {
    await app.query('rollback');
  }
}

const count = async (client: pg.Client, table: string, tenantId: string) =>
  Number(
    (await client.query<{ n: string }>(`select count(*)::text as n from ${table} where tenant_id = $1`, [tenantId]))
      .rows[0]?.n,
  );

describe('row-level security on every tenant-owned table', () => {
  it('runs the service role without superuser or BYPASSRLS', async () => {
    const { rows } = await app.query<{ rolsuper: boolean; rolbypassrls: boolean }>(
      'select rolsuper, rolbypassrls from pg_roles where rolname = current_user',
    );
    expect(rows[0]).toEqual({ rolsuper: false, rolbypassrls: false });
  });

  it('finds the tenant-owned tables of every service schema', () => {
    // A floor, not the list: the list is generated. It stops an empty discovery from passing everything below.
    expect(tables.length).toBeGreaterThanOrEqual(25);
    expect(new Set(tables.map((t) => t.name.split('.')[0]))).toEqual(new Set(serviceNames));
  });

  it('forces row-level security on each of them', () => {
    const unforced = tables.filter((t) => !t.enabled || !t.forced).map((t) => t.name);
    expect(unforced).toEqual([]);
  });

  it('seeded one row per tenant in each (the superuser sees both)', async () => {
    for (const table of tables) {
      expect([table.name, await count(admin, table.name, A), await count(admin, table.name, B)]).toEqual([
        table.name,
        1,
        1,
      ]);
    }
  });

  it('shows the service role no row of any of them without a tenant set', async () => {
    await app.query('begin');
    try {
      for (const table of tables) {
        const { rows } = await app.query<{ n: string }>(`select count(*)::text as n from ${table.name}`);
        expect([table.name, rows[0]?.n]).toEqual([table.name, '0']);
      }
    } finally {
      await app.query('rollback');
    }
  });

  it('shows tenant A its own rows and none of tenant B’s', async () => {
    for (const table of tables) {
      const [own, other] = await asTenant(A, async (c) => [
        await count(c, table.name, A),
        await count(c, table.name, B),
      ]);
      expect([table.name, own, other]).toEqual([table.name, table.name in OPENED_BY_OTHER_KEY ? 0 : 1, 0]);
    }
  });

  it('lets tenant A neither update nor delete tenant B’s rows', async () => {
    for (const table of tables) {
      const updated = await asTenant(
        A,
        async (c) =>
          (await c.query(`update ${table.name} set tenant_id = tenant_id where tenant_id = $1`, [B])).rowCount,
      );
      const deleted = await asTenant(
        A,
        async (c) => (await c.query(`delete from ${table.name} where tenant_id = $1`, [B])).rowCount,
      );
      expect([table.name, updated, deleted]).toEqual([table.name, 0, 0]);
    }
    for (const table of tables) expect([table.name, await count(admin, table.name, B)]).toEqual([table.name, 1]);
  });

  it('refuses tenant A an insert of a row owned by tenant B', async () => {
    for (const table of tables) {
      const { text, values } = insertStatement(table, B);
      const error = await asTenant(A, async (c) =>
        c.query(text, values).then(
          () => undefined,
          (e: Error) => e.message,
        ),
      );
      expect([table.name, error]).toEqual([table.name, expect.stringMatching(/row-level security/)]);
    }
  });

  it('refuses tenant A handing its own row over to tenant B', async () => {
    for (const table of tables.filter((t) => !(t.name in OPENED_BY_OTHER_KEY))) {
      const error = await asTenant(A, async (c) =>
        c.query(`update ${table.name} set tenant_id = $1 where tenant_id = $2`, [B, A]).then(
          (r) => `updated ${r.rowCount}`,
          (e: Error) => e.message,
        ),
      );
      expect([table.name, error]).toEqual([table.name, expect.stringMatching(/row-level security/)]);
    }
  });
});
