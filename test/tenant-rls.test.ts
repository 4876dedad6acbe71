import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { startGateway, type GatewayHarness } from './support/gateway.js';

let gw: GatewayHarness;
let app: pg.Client;
let a: { tenant_id: string; key_id: string };
let b: { tenant_id: string; key_id: string };

beforeAll(async () => {
  gw = await startGateway();
  a = await gw.onboard('developer');
  b = await gw.onboard('developer');
  // The role the services run as, on the gateway's own database: not a superuser, no BYPASSRLS.
  app = new pg.Client({ connectionString: gw.sandbox.databaseUrl });
  await app.connect();
});
afterAll(async () => {
  await app.end();
  await gw.stop();
});

async function asTenant<T extends pg.QueryResultRow>(
  settings: Record<string, string>,
  text: string,
  values: unknown[] = [],
): Promise<T[]> {
  await app.query('begin');
  try {
    for (const [name, value] of Object.entries(settings))
      await app.query('select set_config($1, $2, true)', [name, value]);
    return (await app.query<T>(text, values)).rows;
  } finally {
    await app.query('rollback');
  }
}

describe('row-level security on tenant-owned tables', () => {
  it('runs the service role without superuser or BYPASSRLS', async () => {
    const { rows } = await app.query<{ rolsuper: boolean; rolbypassrls: boolean }>(
      'select rolsuper, rolbypassrls from pg_roles where rolname = current_user',
    );
    expect(rows[0]).toEqual({ rolsuper: false, rolbypassrls: false });
  });

  it.each(['tenant.tenants', 'tenant.api_keys', 'tenant.onboarding_requests'])(
    '%s shows the service role nothing without a tenant set',
    async (table) => {
      const rows = await asTenant<{ n: string }>({}, `select count(*)::text as n from ${table}`);
      expect(rows[0]?.n).toBe('0');
      const { rows: flags } = await app.query<{ relrowsecurity: boolean; relforcerowsecurity: boolean }>(
        'select relrowsecurity, relforcerowsecurity from pg_class where oid = $1::regclass',
        [table],
      );
      expect(flags[0]).toEqual({ relrowsecurity: true, relforcerowsecurity: true });
    },
  );

  it('shows a tenant its own rows and no other tenant’s', async () => {
    const tenants = await asTenant<{ tenant_id: string }>(
      { 'cairn.tenant_id': a.tenant_id },
      'select tenant_id from tenant.tenants',
    );
    expect(tenants.map((r) => r.tenant_id)).toEqual([a.tenant_id]);
    const keys = await asTenant<{ tenant_id: string }>(
      { 'cairn.tenant_id': a.tenant_id },
      'select tenant_id from tenant.api_keys',
    );
    expect(keys.length).toBeGreaterThan(0);
    expect(keys.every((k) => k.tenant_id === a.tenant_id)).toBe(true);
  });

  it('refuses writes into another tenant’s rows', async () => {
    const updated = await asTenant(
      { 'cairn.tenant_id': a.tenant_id },
      'update tenant.tenants set name = $1 where tenant_id = $2 returning tenant_id',
      ['hijacked', b.tenant_id],
    );
    expect(updated).toHaveLength(0);
    await expect(
      asTenant(
        { 'cairn.tenant_id': a.tenant_id },
        "insert into tenant.api_keys (key_id, tenant_id, key_hash, scope) values ('key_x', $1, 'h', 'admin')",
        [b.tenant_id],
      ),
    ).rejects.toThrow(/row-level security/);
  });

  it('opens exactly the presented key’s row to a key lookup, and nothing else', async () => {
    const rows = await asTenant<{ key_id: string }>({ 'cairn.key_id': a.key_id }, 'select key_id from tenant.api_keys');
    expect(rows.map((r) => r.key_id)).toEqual([a.key_id]);
    const tenants = await asTenant({ 'cairn.key_id': a.key_id }, 'select * from tenant.tenants');
    expect(tenants).toHaveLength(0);
  });
});
