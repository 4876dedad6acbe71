import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { APP_ROLE, createSandbox, databaseUrl, PG_ADMIN_URL, provisionServiceRoles } from '@cairn/testing';
import { databaseRole } from '../packages/config/src/index.js';
import { startFleetService, startStack, type Stack } from './support/stack.js';

// Service identities (docs/decisions/0029-fleet-identities.md): what one service may reach of another's, through the
// real parts.
let stack: Stack;
let admin: pg.Client;

beforeAll(async () => {
  stack = await startStack(['audit', 'webhook']);
  admin = await stack.sandbox.adminClient();
}, 120_000);

afterAll(async () => {
  await admin.end();
  await stack.stop();
});

async function asRole<T>(role: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: databaseUrl(PG_ADMIN_URL, stack.sandbox.databaseName, role) });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

describe('Postgres identities', () => {
  it('each service is connected as its own role, and each schema is owned by its service role alone', async () => {
    for (const name of ['audit', 'webhook'] as const) {
      const session = await stack.services
        .get(name)!
        .context.pool.query<{ role: string }>('select current_user as role');
      expect(session.rows[0]!.role).toBe(databaseRole(name));
    }
    const owners = await admin.query<{ schema: string; owner: string }>(
      "select nspname as schema, nspowner::regrole::text as owner from pg_namespace where nspname in ('audit', 'webhook') order by 1",
    );
    expect(owners.rows).toEqual([
      { schema: 'audit', owner: databaseRole('audit') },
      { schema: 'webhook', owner: databaseRole('webhook') },
    ]);
    const powers = await admin.query<{ rolname: string }>(
      "select rolname from pg_roles where rolname like 'cairn\\_%' and (rolsuper or rolbypassrls or rolcreaterole)",
    );
    expect(powers.rows).toEqual([]);
  });

  it("a service's role cannot read or write another service's tables (permission denied), only its own", async () => {
    const tables = await admin.query<{ name: string }>(
      "select quote_ident(schemaname) || '.' || quote_ident(tablename) as name from pg_tables where schemaname = 'audit' order by 1",
    );
    expect(tables.rows.length).toBeGreaterThan(0);
    const auditTable = tables.rows[0]!.name;
    await asRole(databaseRole('webhook'), async (client) => {
      await expect(client.query(`select * from ${auditTable} limit 1`)).rejects.toMatchObject({ code: '42501' });
      await expect(client.query(`delete from ${auditTable}`)).rejects.toMatchObject({ code: '42501' });
      // Nor the other service's migration journal.
      await expect(client.query('select * from cairn_migrations.audit')).rejects.toMatchObject({ code: '42501' });
    });
    await asRole(databaseRole('audit'), async (client) => {
      await expect(client.query(`select count(*) from ${auditTable}`)).resolves.toBeDefined();
    });
  });

  it('a database an older fleet made as one shared role is adopted: the service then starts as its own role', async () => {
    const sandbox = await createSandbox();
    try {
      const shared = await startFleetService('webhook', sandbox.env);
      await shared.stop();
      await provisionServiceRoles(PG_ADMIN_URL, sandbox.databaseName, APP_ROLE, [
        { schema: 'webhook', role: databaseRole('webhook') },
      ]);
      const own = await startFleetService('webhook', {
        ...sandbox.env,
        DATABASE_URL: databaseUrl(PG_ADMIN_URL, sandbox.databaseName, databaseRole('webhook')),
      });
      try {
        const tables = await own.context.pool.query<{ owner: string }>(
          "select distinct tableowner as owner from pg_tables where schemaname = 'webhook'",
        );
        expect(tables.rows).toEqual([{ owner: databaseRole('webhook') }]);
      } finally {
        await own.stop();
      }
    } finally {
      await sandbox.dispose();
    }
  }, 60_000);
});
