import type pg from 'pg';

export interface ImportCounts {
  tenants: number;
  apiKeys: number;
  onboardingRequests: number;
  recipes: number;
}

/**
 * The gateway's tables from before the tenant service (docs/decisions/0037-tenant-service.md), each with its key column
 * (what the copy is checked by).
 */
const LEGACY = [
  { table: 'tenants', key: 'tenant_id', count: 'tenants' },
  { table: 'api_keys', key: 'key_id', count: 'apiKeys' },
  { table: 'onboarding_requests', key: 'idempotency_key', count: 'onboardingRequests' },
] as const;

/**
 * Moves the tenants, API keys and onboarding records the gateway kept before the tenant service existed into
 * the tenant schema, once: read as the gateway's own role (`cairn.system = 'tenant-handover'` opens its legacy
 * rows), written as the tenant service's (`cairn.system = 'gateway-import'`), each row kept as it was (ids, key
 * hashes, sealed onboarding answers, timestamps). The legacy tables stay locked against writes from the read
 * until they are emptied, which happens only after the tenant side committed and holds every row, so an
 * interrupted run loses nothing and a second run finds nothing left (rows already imported are skipped).
 * Recipes carry over their `active` flag (the catalog itself is seeded by the tenant service).
 */
export async function importGatewayTenants(gatewayPool: pg.Pool, tenantPool: pg.Pool): Promise<ImportCounts> {
  const counts: ImportCounts = { tenants: 0, apiKeys: 0, onboardingRequests: 0, recipes: 0 };
  const gateway = await gatewayPool.connect();
  try {
    await gateway.query('begin');
    const present = await gateway.query<{ present: boolean }>(
      "select to_regclass('gateway.tenants') is not null as present",
    );
    if (!present.rows[0]?.present) {
      await gateway.query('rollback');
      return counts;
    }
    await gateway.query("select set_config('cairn.system', 'tenant-handover', true)");
    await gateway.query(
      'lock table gateway.tenants, gateway.api_keys, gateway.onboarding_requests, gateway.recipes in exclusive mode',
    );
    const rows = new Map<string, unknown[]>();
    for (const { table } of [...LEGACY, { table: 'recipes' }]) {
      const { rows: found } = await gateway.query<{ row: unknown }>(
        `select to_jsonb(t) as row from gateway.${table} t`,
      );
      rows.set(
        table,
        found.map((r) => r.row),
      );
    }

    const tenant = await tenantPool.connect();
    try {
      await tenant.query('begin');
      await tenant.query("select set_config('cairn.system', 'gateway-import', true)");
      for (const { table, key, count } of LEGACY) {
        const legacy = rows.get(table) ?? [];
        await tenant.query(
          `insert into tenant.${table} select * from jsonb_populate_recordset(null::tenant.${table}, $1::jsonb) on conflict do nothing`,
          [JSON.stringify(legacy)],
        );
        const ids = legacy.map((row) => String((row as Record<string, unknown>)[key]));
        const held = await tenant.query<{ n: number }>(
          `select count(*)::int as n from tenant.${table} where ${key} = any($1::text[])`,
          [ids],
        );
        if (held.rows[0]?.n !== ids.length)
          throw new Error(`tenant.${table} holds ${held.rows[0]?.n ?? 0} of the ${ids.length} rows imported`);
        counts[count] = ids.length;
      }
      const recipes = rows.get('recipes') ?? [];
      await tenant.query(
        `insert into tenant.recipes select * from jsonb_populate_recordset(null::tenant.recipes, $1::jsonb)
           on conflict (recipe_id) do update set active = excluded.active`,
        [JSON.stringify(recipes)],
      );
      counts.recipes = recipes.length;
      await tenant.query('commit');
    } catch (error) {
      await tenant.query('rollback');
      throw error;
    } finally {
      tenant.release();
    }

    for (const table of ['api_keys', 'onboarding_requests', 'tenants', 'recipes'])
      await gateway.query(`delete from gateway.${table}`);
    await gateway.query('commit');
    return counts;
  } catch (error) {
    await gateway.query('rollback');
    throw error;
  } finally {
    gateway.release();
  }
}
