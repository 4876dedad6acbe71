/**
 * Upgrading a fleet whose gateway kept tenants in its own schema (before the tenant service existed): the new gateway
 * refuses to start while those rows are there, `pnpm cairn admin import-gateway-tenants` moves them to the tenant
 * service once, and the old API keys then work through the gateway as before.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { createPool, migrateService } from '../packages/db/src/index.js';
import { newApiKey, newId } from '../packages/ids/src/index.js';
import type { RunningService } from '@cairn/runtime';
import {
  APP_ROLE,
  apiRequester,
  createSandbox,
  databaseUrl,
  PG_ADMIN_URL,
  provisionServiceRoles,
  type Sandbox,
} from '@cairn/testing';
import { databaseRole } from '../packages/config/src/index.js';
import { migrationsFolder as gatewayMigrations } from '../services/gateway/src/service.js';
import { startFleetService } from './support/stack.js';

const run = promisify(execFile);
const cli = fileURLToPath(new URL('../services/tenant/src/cli.ts', import.meta.url));

let sandbox: Sandbox;
let tenantService: RunningService | undefined;
let gateway: RunningService | undefined;
const urlAs = (service: 'gateway' | 'tenant') => databaseUrl(PG_ADMIN_URL, sandbox.databaseName, databaseRole(service));

const legacyTenant = newId('tenant');
const legacyKey = newApiKey();

beforeAll(async () => {
  sandbox = await createSandbox();
  await provisionServiceRoles(PG_ADMIN_URL, sandbox.databaseName, APP_ROLE, [
    { schema: 'gateway', role: databaseRole('gateway') },
    { schema: 'tenant', role: databaseRole('tenant') },
  ]);
  // The gateway's schema as an older gateway left it, holding one tenant and its key.
  const pool = createPool(urlAs('gateway'), 1);
  try {
    await migrateService(pool, 'gateway', gatewayMigrations);
    const client = await pool.connect();
    try {
      await client.query('begin');
      await client.query("select set_config('cairn.system', 'tenant-handover', true)");
      await client.query(
        `insert into gateway.tenants (tenant_id, name, email, plan, audit_retention_days, rate_limit_rps, rate_limit_daily)
         values ($1, 'Before the move', 'old@example.com', 'growth', 200, 50, 100000)`,
        [legacyTenant],
      );
      await client.query(
        "insert into gateway.api_keys (key_id, tenant_id, key_hash, scope) values ($1, $2, $3, 'admin')",
        [legacyKey.keyId, legacyTenant, createHash('sha256').update(legacyKey.apiKey, 'utf8').digest('hex')],
      );
      await client.query('commit');
    } finally {
      client.release();
    }
  } finally {
    await pool.end();
  }
});

afterAll(async () => {
  await gateway?.stop();
  await tenantService?.stop();
  await sandbox.dispose();
});

function importCommand() {
  return run(process.execPath, ['--import', 'tsx', cli, 'admin', 'import-gateway-tenants', '--json'], {
    env: { ...process.env, ...sandbox.env, DATABASE_URL: urlAs('tenant'), GATEWAY_DATABASE_URL: urlAs('gateway') },
    timeout: 60_000,
  });
}

describe('moving tenants from the gateway schema to the tenant service', () => {
  it('the gateway refuses to start while its schema still holds tenants, and says what to run', async () => {
    tenantService = await startFleetService('tenant', { ...sandbox.env, DATABASE_URL: urlAs('tenant') });
    await expect(
      startFleetService('gateway', {
        ...sandbox.env,
        DATABASE_URL: urlAs('gateway'),
        TENANT_GRPC_ADDR: `127.0.0.1:${tenantService.grpcPort}`,
      }),
    ).rejects.toThrow(/import-gateway-tenants/);
  });

  it('imports once; the old key then works through the gateway, with the tenant as it was', async () => {
    const { stdout } = await importCommand();
    expect(JSON.parse(stdout)).toMatchObject({ tenants: 1, apiKeys: 1, onboardingRequests: 0 });
    const again = await importCommand();
    expect(JSON.parse(again.stdout)).toMatchObject({ tenants: 0, apiKeys: 0, onboardingRequests: 0 });

    gateway = await startFleetService('gateway', {
      ...sandbox.env,
      DATABASE_URL: urlAs('gateway'),
      TENANT_GRPC_ADDR: `127.0.0.1:${tenantService!.grpcPort}`,
    });
    const request = apiRequester(`http://127.0.0.1:${gateway.endpoints.http}`);
    const res = await request(`/v1/tenants/${legacyTenant}/settings`, { key: legacyKey.apiKey });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({
      tenant_id: legacyTenant,
      plan: 'growth',
      audit_retention_days: 200,
      rate_limits: { rps: 50, daily: 100000 },
    });
    // Nothing is left in the gateway's schema (a superuser sees through row-level security).
    const admin = await sandbox.adminClient();
    try {
      const { rows } = await admin.query<{ n: number }>(
        'select (select count(*) from gateway.tenants) + (select count(*) from gateway.api_keys)::int as n',
      );
      expect(Number(rows[0]?.n)).toBe(0);
    } finally {
      await admin.end();
    }
  });
});
