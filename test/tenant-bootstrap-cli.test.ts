import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { problemOf, startGateway, type GatewayHarness } from './support/gateway.js';

const run = promisify(execFile);
const cli = fileURLToPath(new URL('../services/tenant/src/cli.ts', import.meta.url));

let gw: GatewayHarness;
beforeAll(async () => {
  gw = await startGateway();
});
afterAll(() => gw.stop());

function cairn(args: string[]) {
  return run(process.execPath, ['--import', 'tsx', cli, ...args], {
    env: { ...process.env, ...gw.sandbox.env },
    timeout: 30_000,
  });
}

describe('pnpm cairn admin bootstrap', () => {
  it('creates an enterprise primary tenant and prints its admin key once', async () => {
    const { stdout } = await cairn(['admin', 'bootstrap', '--name', 'ACME', '--json']);
    const created = JSON.parse(stdout) as { tenant_id: string; api_key: string; plan: string };
    expect(created.plan).toBe('enterprise');
    const tenant = await gw.request(`/v1/tenants/${created.tenant_id}`, { key: created.api_key });
    expect(await tenant.json()).toMatchObject({
      tenant_id: created.tenant_id,
      name: 'ACME',
      plan: 'enterprise',
      parent_tenant_id: null,
    });

    // Enterprise retention goes up to seven years, and no further.
    const ok = await gw.request(`/v1/tenants/${created.tenant_id}/settings`, {
      method: 'PATCH',
      key: created.api_key,
      json: { audit_retention_days: 2555 },
    });
    expect(ok.status).toBe(200);
    const tooLong = await gw.request(`/v1/tenants/${created.tenant_id}/settings`, {
      method: 'PATCH',
      key: created.api_key,
      json: { audit_retention_days: 2556 },
    });
    expect((await problemOf(tooLong)).code).toBe('cairn.settings.out_of_range');

    // An enterprise parent may create enterprise sub-tenants.
    const sub = await gw.request('/v1/tenants', {
      method: 'POST',
      key: created.api_key,
      json: { name: 'ACME EU', plan: 'enterprise', spending_cap_usd: 0 },
    });
    expect(sub.status).toBe(201);
  });

  it('prints the key in plain text mode with how to use it', async () => {
    const { stdout } = await cairn(['admin', 'bootstrap', '--name', 'Globex']);
    expect(stdout).toMatch(/Admin API key \(shown once/);
    expect(stdout).toMatch(/cairn_sk_key_[0-9A-Z]{26}_/);
  });

  it('refuses a missing name with usage and exit code 2', async () => {
    await expect(cairn(['admin', 'bootstrap'])).rejects.toMatchObject({
      code: 2,
      stderr: expect.stringContaining('--name is required'),
    });
  });
});
