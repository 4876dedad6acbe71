import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { billingV1 } from '@cairn/proto';
import { createClient } from '@cairn/rpc';
import { onboard, startStack, type Stack } from './support/stack.js';

// A lookup (by binding value, the cheapest metered call) costs $1 of overage on growth here, so spend is easy to read.
const LOOKUP_USD = 1;

let stack: Stack;
let admin: pg.Client;
const billingClient = (address: string) => createClient(billingV1.BillingService, address);
let billing: ReturnType<typeof billingClient>;

beforeAll(async () => {
  stack = await startStack(['softbinding', 'gateway'], {
    ONBOARD_RATE_LIMIT_PER_MINUTE: '1000',
    BILLING_PRICES_JSON: JSON.stringify({ growth: { lookup: LOOKUP_USD } }),
  });
  admin = await stack.sandbox.adminClient();
  billing = billingClient(String(stack.env.BILLING_GRPC_ADDR));
});

afterAll(async () => {
  billing.close();
  await admin.end();
  await stack.stop();
});

interface Problem {
  code: string;
  detail: string;
  errors?: Array<{ path: string }>;
}

async function problem(res: Response, status: number): Promise<Problem> {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toContain('application/problem+json');
  return (await res.json()) as Problem;
}

const createChild = (key: string, json: Record<string, unknown>) =>
  stack.request('/v1/tenants', { method: 'POST', key, json });
const patchSettings = (key: string, tenantId: string, json: Record<string, unknown>) =>
  stack.request(`/v1/tenants/${tenantId}/settings`, { method: 'PATCH', key, json });

async function capOf(key: string, tenantId: string): Promise<number | null> {
  const res = await stack.request(`/v1/tenants/${tenantId}/settings`, { key });
  expect(res.status).toBe(200);
  return ((await res.json()) as { spending_cap_usd: number | null }).spending_cap_usd;
}

async function childrenOf(tenantId: string): Promise<number> {
  const { rows } = await admin.query<{ n: string }>(
    'select count(*) as n from tenant.tenants where parent_tenant_id = $1',
    [tenantId],
  );
  return Number(rows[0]!.n);
}

/** A growth parent with a sub-tenant and the sub-tenant's own admin key (as a parent hands one out). */
async function family(parentCap: number, childJson: Record<string, unknown> = { name: 'Child', plan: 'growth' }) {
  const parent = await onboard(stack, 'growth');
  expect((await patchSettings(parent.api_key, parent.tenant_id, { spending_cap_usd: parentCap })).status).toBe(200);
  const created = await createChild(parent.api_key, childJson);
  expect(created.status).toBe(201);
  const child = (await created.json()) as { tenant_id: string; spending_cap_usd: number | null };
  const keyRes = await stack.request(`/v1/tenants/${child.tenant_id}/keys`, {
    method: 'POST',
    key: parent.api_key,
    json: { scope: 'admin' },
  });
  expect(keyRes.status).toBe(201);
  return { parent, child, childKey: ((await keyRes.json()) as { api_key: string }).api_key };
}

describe('sub-tenants need a plan that pays for them', () => {
  it.each(['free', 'developer'] as const)(
    'a self-onboarded %s tenant cannot create sub-tenants (each would bring its own quotas)',
    async (plan) => {
      const attacker = await onboard(stack, plan);
      const refused = await problem(await createChild(attacker.api_key, { name: 'Free Riders 1', plan: 'free' }), 403);
      expect(refused.code).toBe('cairn.tenant.subtenants_not_available');
      expect(refused.detail).toMatch(/growth and enterprise/);
      expect(await childrenOf(attacker.tenant_id)).toBe(0);
    },
  );

  it('a growth tenant creates sub-tenants on its own plan or a lower one, never above', async () => {
    const parent = await onboard(stack, 'growth');
    expect((await createChild(parent.api_key, { name: 'Dev child', plan: 'developer' })).status).toBe(201);
    expect(
      (await problem(await createChild(parent.api_key, { name: 'Big child', plan: 'enterprise' }), 400)).code,
    ).toBe('cairn.tenant.plan_not_allowed');
    expect(await childrenOf(parent.tenant_id)).toBe(1);
  });
});

describe('a sub-tenant’s spending cap is its parent’s to set, and never above the parent’s', () => {
  it('refuses to create a child with a higher cap or none under a capped parent; an absent cap inherits the parent’s', async () => {
    const parent = await onboard(stack, 'growth');
    expect((await patchSettings(parent.api_key, parent.tenant_id, { spending_cap_usd: 5 })).status).toBe(200);

    const higher = await problem(
      await createChild(parent.api_key, { name: 'Over', plan: 'growth', spending_cap_usd: 1000 }),
      400,
    );
    expect(higher.code).toBe('cairn.tenant.spending_cap_above_parent');
    expect(higher.errors?.map((e) => e.path)).toEqual(['spending_cap_usd']);
    expect(higher.detail).toContain('$5.00');
    expect(
      (
        await problem(
          await createChild(parent.api_key, { name: 'Uncapped', plan: 'growth', spending_cap_usd: null }),
          400,
        )
      ).code,
    ).toBe('cairn.tenant.spending_cap_above_parent');
    expect(await childrenOf(parent.tenant_id)).toBe(0);

    const inherited = await createChild(parent.api_key, { name: 'Inherits', plan: 'growth' });
    expect(inherited.status).toBe(201);
    expect(((await inherited.json()) as { spending_cap_usd: number | null }).spending_cap_usd).toBe(5);
    const lower = await createChild(parent.api_key, { name: 'Lower', plan: 'growth', spending_cap_usd: 2.5 });
    expect(lower.status).toBe(201);
    expect(((await lower.json()) as { spending_cap_usd: number | null }).spending_cap_usd).toBe(2.5);
  });

  it('the child’s own admin key cannot lift its cap (null or above), but keeps its other settings', async () => {
    const { parent, child, childKey } = await family(5, { name: 'Child', plan: 'growth', spending_cap_usd: 5 });
    for (const cap of [null, 1000, 1]) {
      const refused = await problem(await patchSettings(childKey, child.tenant_id, { spending_cap_usd: cap }), 403);
      expect(refused.code).toBe('cairn.auth.forbidden');
      expect(refused.detail).toMatch(/set by its parent/);
    }
    expect(await capOf(parent.api_key, child.tenant_id)).toBe(5);
    const own = await patchSettings(childKey, child.tenant_id, { audit_retention_days: 90 });
    expect(own.status).toBe(200);
    expect(await own.json()).toMatchObject({ audit_retention_days: 90, spending_cap_usd: 5 });
    // Nor can it reach its parent's settings at all.
    expect((await problem(await patchSettings(childKey, parent.tenant_id, { spending_cap_usd: null }), 404)).code).toBe(
      'cairn.not_found',
    );
    expect(await capOf(parent.api_key, parent.tenant_id)).toBe(5);
  });

  it('the parent sets the child’s cap within its own; lowering its own cap lowers every child above it', async () => {
    const { parent, child } = await family(5, { name: 'Child', plan: 'growth', spending_cap_usd: 4 });
    expect(
      (await problem(await patchSettings(parent.api_key, child.tenant_id, { spending_cap_usd: 1000 }), 400)).code,
    ).toBe('cairn.tenant.spending_cap_above_parent');
    expect(
      (await problem(await patchSettings(parent.api_key, child.tenant_id, { spending_cap_usd: null }), 400)).code,
    ).toBe('cairn.tenant.spending_cap_above_parent');
    expect(await capOf(parent.api_key, child.tenant_id)).toBe(4);
    expect((await patchSettings(parent.api_key, child.tenant_id, { spending_cap_usd: 3 })).status).toBe(200);
    expect(await capOf(parent.api_key, child.tenant_id)).toBe(3);

    expect((await patchSettings(parent.api_key, parent.tenant_id, { spending_cap_usd: 2 })).status).toBe(200);
    expect(await capOf(parent.api_key, child.tenant_id)).toBe(2);
    // Raising the parent's cap (or removing it) leaves the children's as they are.
    expect((await patchSettings(parent.api_key, parent.tenant_id, { spending_cap_usd: null })).status).toBe(200);
    expect(await capOf(parent.api_key, child.tenant_id)).toBe(2);
    // With no cap above it, the parent may now give the child any cap, or none.
    expect((await patchSettings(parent.api_key, child.tenant_id, { spending_cap_usd: null })).status).toBe(200);
    expect(await capOf(parent.api_key, child.tenant_id)).toBeNull();
  });

  it('billing stops the child at the cap its parent allows, whatever the child’s key tried', async () => {
    const { child, childKey } = await family(2, { name: 'Spender', plan: 'growth' });
    await patchSettings(childKey, child.tenant_id, { spending_cap_usd: null }); // refused above; tried anyway
    await billing.setQuota({ tenantId: child.tenant_id, meter: 'lookup', quota: 0n });
    const lookup = () =>
      stack.request('/v1/lookup', {
        method: 'POST',
        key: childKey,
        json: { binding: { alg: 'cairn.pdq.v1', value: 'ab'.repeat(32) } },
      });
    expect((await lookup()).status).toBe(200);
    expect((await lookup()).status).toBe(200); // $2 of overage: at the cap, allowed
    expect((await problem(await lookup(), 402)).code).toBe('cairn.billing.spending_cap_reached');
    const usage = (await (await stack.request('/v1/usage', { key: childKey })).json()) as {
      spend_usd: number;
      spending_cap_usd: number | null;
    };
    expect(usage).toMatchObject({ spend_usd: 2 * LOOKUP_USD, spending_cap_usd: 2 });
  });
});
