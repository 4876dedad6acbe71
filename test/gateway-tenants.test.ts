import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { problemOf, startGateway, type GatewayHarness } from './support/gateway.js';

let gw: GatewayHarness;
let parent: { tenant_id: string; api_key: string };
let stranger: { tenant_id: string; api_key: string };

beforeAll(async () => {
  gw = await startGateway();
  parent = await gw.onboard('growth');
  stranger = await gw.onboard('developer');
});
afterAll(() => gw.stop());

async function createSubTenant(json: Record<string, unknown>) {
  return gw.request('/v1/tenants', { method: 'POST', key: parent.api_key, json });
}

describe('sub-tenants', () => {
  it('creates an isolated sub-tenant whose own keys work, managed by the parent', async () => {
    const res = await createSubTenant({
      name: 'Studio A',
      email: 'a@example.com',
      plan: 'developer',
      spending_cap_usd: 250,
    });
    expect(res.status).toBe(201);
    const sub = (await res.json()) as { tenant_id: string };
    expect(sub).toMatchObject({
      tenant_id: expect.stringMatching(/^t_/),
      name: 'Studio A',
      plan: 'developer',
      spending_cap_usd: 250,
      parent_tenant_id: parent.tenant_id,
    });

    const keyRes = await gw.request(`/v1/tenants/${sub.tenant_id}/keys`, {
      method: 'POST',
      key: parent.api_key,
      json: { scope: 'admin' },
    });
    expect(keyRes.status).toBe(201);
    const subKey = (await keyRes.json()) as { api_key: string; key_id: string };

    // The sub-tenant sees itself, not its parent.
    expect((await gw.request(`/v1/tenants/${sub.tenant_id}`, { key: subKey.api_key })).status).toBe(200);
    expect((await gw.request(`/v1/tenants/${parent.tenant_id}`, { key: subKey.api_key })).status).toBe(404);
    expect((await gw.request(`/v1/tenants/${parent.tenant_id}/keys`, { key: subKey.api_key })).status).toBe(404);
    // Nor can it create sub-tenants of its own.
    const nested = await gw.request('/v1/tenants', {
      method: 'POST',
      key: subKey.api_key,
      json: { name: 'x', plan: 'free' },
    });
    expect(nested.status).toBe(403);

    // The parent lists and revokes the sub-tenant's keys.
    const list = (await (await gw.request(`/v1/tenants/${sub.tenant_id}/keys`, { key: parent.api_key })).json()) as {
      data: Array<{ key_id: string }>;
    };
    expect(list.data.map((k) => k.key_id)).toContain(subKey.key_id);
    expect(
      (
        await gw.request(`/v1/tenants/${sub.tenant_id}/keys/${subKey.key_id}`, {
          method: 'DELETE',
          key: parent.api_key,
        })
      ).status,
    ).toBe(200);
    expect((await gw.request('/v1/recipes', { key: subKey.api_key })).status).toBe(401);
  });

  it('has its own rate limits, from its own plan', async () => {
    const sub = (await (await createSubTenant({ name: 'Limits', plan: 'free' })).json()) as { tenant_id: string };
    const settings = (await (
      await gw.request(`/v1/tenants/${sub.tenant_id}/settings`, { key: parent.api_key })
    ).json()) as { rate_limits: unknown };
    expect(settings.rate_limits).toEqual({ rps: 5, daily: 5000 });
  });

  it('refuses a plan above the parent’s', async () => {
    const res = await createSubTenant({ name: 'Big', plan: 'enterprise' });
    expect(res.status).toBe(400);
    expect((await problemOf(res)).code).toBe('cairn.tenant.plan_not_allowed');
  });

  it('refuses a negative spending cap and an unknown plan, naming each field', async () => {
    const res = await createSubTenant({ name: 'Bad', plan: 'platinum', spending_cap_usd: -5 });
    const problem = (await problemOf(res)) as unknown as { code: string; errors: Array<{ path: string }> };
    expect(problem.code).toBe('cairn.validation.invalid_body');
    expect(problem.errors.map((e) => e.path).sort()).toEqual(['plan', 'spending_cap_usd']);
  });
});

describe('cross-tenant isolation over HTTP', () => {
  it('answers 404 for another tenant, whatever the operation', async () => {
    const target = parent.tenant_id;
    for (const [path, init] of [
      [`/v1/tenants/${target}`, { method: 'GET' }],
      [`/v1/tenants/${target}/keys`, { method: 'GET' }],
      [`/v1/tenants/${target}/keys`, { method: 'POST', json: { scope: 'admin' } }],
      [`/v1/tenants/${target}/keys/key_01JAAAAAAAAAAAAAAAAAAAAAAA`, { method: 'DELETE' }],
      [`/v1/tenants/${target}/settings`, { method: 'PATCH', json: { spending_cap_usd: 0 } }],
    ] as const) {
      const res = await gw.request(path, { ...init, key: stranger.api_key });
      expect(res.status).toBe(404);
      expect((await problemOf(res)).code).toBe('cairn.not_found');
    }
  });

  it('cannot revoke another tenant’s key even when it knows the key id', async () => {
    const list = (await (await gw.request(`/v1/tenants/${parent.tenant_id}/keys`, { key: parent.api_key })).json()) as {
      data: Array<{ key_id: string }>;
    };
    const parentKeyId = list.data[0]!.key_id;
    const res = await gw.request(`/v1/tenants/${stranger.tenant_id}/keys/${parentKeyId}`, {
      method: 'DELETE',
      key: stranger.api_key,
    });
    expect(res.status).toBe(404);
    expect((await gw.request('/v1/recipes', { key: parent.api_key })).status).toBe(200);
  });
});

describe('PATCH /v1/tenants/{id}/settings', () => {
  it('answers the resulting settings', async () => {
    const res = await gw.request(`/v1/tenants/${parent.tenant_id}/settings`, {
      method: 'PATCH',
      key: parent.api_key,
      json: { audit_retention_days: 200, spending_cap_usd: 1234.5 },
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({
      tenant_id: parent.tenant_id,
      plan: 'growth',
      audit_retention_days: 200,
      audit_retention_days_max: 365,
      spending_cap_usd: 1234.5,
    });
    const again = (await (
      await gw.request(`/v1/tenants/${parent.tenant_id}/settings`, { key: parent.api_key })
    ).json()) as Record<string, unknown>;
    expect(again.audit_retention_days).toBe(200);
  });

  it('bounds audit retention by plan', async () => {
    const res = await gw.request(`/v1/tenants/${stranger.tenant_id}/settings`, {
      method: 'PATCH',
      key: stranger.api_key,
      json: { audit_retention_days: 31 },
    });
    expect(res.status).toBe(400);
    const problem = await problemOf(res);
    expect(problem.code).toBe('cairn.settings.out_of_range');
    expect(problem.detail).toContain('30');
  });

  it.each([
    [{ spending_cap_usd: -1 }],
    [{ audit_retention_days: 0 }],
    [{ audit_retention_days: 10.5 }],
    [{}],
    [{ plan: 'enterprise' }],
  ])('refuses %j', async (json) => {
    const res = await gw.request(`/v1/tenants/${parent.tenant_id}/settings`, {
      method: 'PATCH',
      key: parent.api_key,
      json,
    });
    expect(res.status).toBe(400);
    expect((await problemOf(res)).code).toBe('cairn.validation.invalid_body');
  });

  it('removes a spending cap with null', async () => {
    const res = await gw.request(`/v1/tenants/${parent.tenant_id}/settings`, {
      method: 'PATCH',
      key: parent.api_key,
      json: { spending_cap_usd: null },
    });
    expect((await res.json()) as Record<string, unknown>).toMatchObject({ spending_cap_usd: null });
  });
});

describe('GET /v1/recipes', () => {
  it('lists the six seeded recipes with what a sign needs, marking those the plan offers', async () => {
    const free = await gw.onboard('free');
    const res = await gw.request('/v1/recipes', { key: free.api_key });
    const { data } = (await res.json()) as {
      data: Array<Record<string, unknown> & { recipe_id: string; available: boolean }>;
    };
    expect(data.map((r) => r.recipe_id)).toEqual([
      'audio-genai-v1',
      'image-capture-v1',
      'image-genai-v1',
      'text-genai-v1',
      'video-capture-v1',
      'video-genai-v1',
    ]);
    const image = data.find((r) => r.recipe_id === 'image-genai-v1')!;
    expect(image).toMatchObject({
      media_types: ['image/jpeg', 'image/png', 'image/webp'],
      layers: { c2pa: true, watermark: true, soft_binding: true, anchor: true },
      retention: { derived_asset_days: 30 },
      billing: { meter: 'image_sign' },
      available: true,
    });
    expect(data.filter((r) => r.available).map((r) => r.recipe_id)).toEqual(['image-capture-v1', 'image-genai-v1']);
  });
});
