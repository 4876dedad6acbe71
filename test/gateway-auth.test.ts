import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash } from 'node:crypto';
import { gatewayForFile, problemOf, startGateway, type GatewayHarness } from './support/gateway.js';

const gw = gatewayForFile();

async function mintKey(scope: string, extra: Record<string, unknown> = {}) {
  const res = await gw.request(`/v1/tenants/${gw.admin.tenant_id}/keys`, {
    method: 'POST',
    key: gw.admin.api_key,
    json: { scope, description: `${scope} key`, ...extra },
  });
  expect(res.status).toBe(201);
  return (await res.json()) as { key_id: string; api_key: string; scope: string; expires_at: string | null };
}

describe('API key authentication', () => {
  it.each([
    ['no Authorization header', {}],
    ['a non-Bearer scheme', { authorization: 'Basic dXNlcjpwYXNz' }],
    ['a malformed key', { authorization: 'Bearer not-a-cairn-key' }],
    [
      'a well-formed but unknown key',
      { authorization: `Bearer cairn_sk_key_01JAAAAAAAAAAAAAAAAAAAAAAA_${'x'.repeat(43)}` },
    ],
  ])('answers 401 cairn.auth.invalid_key for %s', async (_name, headers) => {
    const res = await gw.request('/v1/recipes', { headers });
    expect(res.status).toBe(401);
    expect((await problemOf(res)).code).toBe('cairn.auth.invalid_key');
  });

  it('refuses a key whose secret part was altered', async () => {
    const tampered = gw.admin.api_key.slice(0, -4) + (gw.admin.api_key.endsWith('AAAA') ? 'BBBB' : 'AAAA');
    const res = await gw.request('/v1/recipes', { key: tampered });
    expect(res.status).toBe(401);
  });

  it('refuses a revoked key, immediately', async () => {
    const key = await mintKey('read');
    expect((await gw.request('/v1/recipes', { key: key.api_key })).status).toBe(200);
    const revoke = await gw.request(`/v1/tenants/${gw.admin.tenant_id}/keys/${key.key_id}`, {
      method: 'DELETE',
      key: gw.admin.api_key,
    });
    expect(revoke.status).toBe(200);
    expect(await revoke.json()).toMatchObject({ key_id: key.key_id, status: 'revoked' });
    const res = await gw.request('/v1/recipes', { key: key.api_key });
    expect(res.status).toBe(401);
    expect((await problemOf(res)).detail).toMatch(/revoked/);
  });

  it('refuses an expired key', async () => {
    const key = await mintKey('read', { expires_at: new Date(Date.now() + 1500).toISOString() });
    expect((await gw.request('/v1/recipes', { key: key.api_key })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 1700));
    const res = await gw.request('/v1/recipes', { key: key.api_key });
    expect(res.status).toBe(401);
    expect((await problemOf(res)).detail).toMatch(/expired/);
  });

  it('refuses an expiry in the past when minting', async () => {
    const res = await gw.request(`/v1/tenants/${gw.admin.tenant_id}/keys`, {
      method: 'POST',
      key: gw.admin.api_key,
      json: { scope: 'sign', expires_at: '2020-01-01T00:00:00Z' },
    });
    expect(res.status).toBe(400);
    expect((await problemOf(res)).code).toBe('cairn.validation.invalid_body');
  });

  it('shows a key once: the listing never contains a secret', async () => {
    const key = await mintKey('sign');
    expect(key.api_key).toMatch(/^cairn_sk_/);
    const list = await gw.request(`/v1/tenants/${gw.admin.tenant_id}/keys?limit=100`, { key: gw.admin.api_key });
    const text = await list.text();
    expect(text).toContain(key.key_id);
    expect(text).not.toContain('cairn_sk_');
  });
});

describe('API keys at rest', () => {
  it('stores only the SHA-256 of each key: no table of the database holds a key or its secret part', async () => {
    const minted = [
      await mintKey('sign'),
      await mintKey('read', { expires_at: new Date(Date.now() + 86_400_000).toISOString() }),
    ];
    const onboarded = await gw.onboard('free');
    const keys = [
      ...minted.map((k) => ({ key_id: k.key_id, api_key: k.api_key })),
      { key_id: onboarded.key_id, api_key: onboarded.api_key },
    ];
    // A superuser connection: row-level security must not hide a row that might leak.
    const db = await gw.sandbox.adminClient();
    try {
      const { rows: tables } = await db.query<{ schema: string; name: string }>(
        "select table_schema as schema, table_name as name from information_schema.tables where table_type = 'BASE TABLE' and table_schema not in ('pg_catalog', 'information_schema')",
      );
      expect(tables.map((t) => `${t.schema}.${t.name}`)).toContain('tenant.api_keys');
      let everything = '';
      for (const t of tables) {
        const { rows } = await db.query<{ row: string }>(`select t::text as row from "${t.schema}"."${t.name}" t`);
        everything += rows.map((r) => r.row).join('\n');
      }
      for (const { key_id, api_key } of keys) {
        const prefix = `cairn_sk_${key_id}_`;
        expect(api_key.startsWith(prefix)).toBe(true);
        const secret = api_key.slice(prefix.length);
        expect(secret.length).toBeGreaterThanOrEqual(43);
        expect(everything).not.toContain(api_key);
        expect(everything).not.toContain(secret);
        const { rows } = await db.query<{ key_hash: string }>(
          'select key_hash from tenant.api_keys where key_id = $1',
          [key_id],
        );
        expect(rows).toEqual([{ key_hash: createHash('sha256').update(api_key, 'utf8').digest('hex') }]);
      }
    } finally {
      await db.end();
    }
  });
});

describe('scopes', () => {
  it('lets a sign key list recipes but not manage keys or tenants (403)', async () => {
    const sign = await mintKey('sign');
    expect((await gw.request('/v1/recipes', { key: sign.api_key })).status).toBe(200);
    for (const [path, init] of [
      [`/v1/tenants/${gw.admin.tenant_id}/keys`, { method: 'POST', json: { scope: 'admin' } }],
      [`/v1/tenants/${gw.admin.tenant_id}/keys`, { method: 'GET' }],
      ['/v1/tenants', { method: 'POST', json: { name: 'x', plan: 'free' } }],
      [`/v1/tenants/${gw.admin.tenant_id}/settings`, { method: 'PATCH', json: { spending_cap_usd: 1 } }],
    ] as const) {
      const res = await gw.request(path, { ...init, key: sign.api_key });
      expect(res.status).toBe(403);
      const problem = await problemOf(res);
      expect(problem.code).toBe('cairn.auth.forbidden');
      expect(problem.detail).toContain('admin');
    }
  });

  it('lets a read key list recipes', async () => {
    const read = await mintKey('read');
    expect((await gw.request('/v1/recipes', { key: read.api_key })).status).toBe(200);
  });

  it('refuses an unknown scope', async () => {
    const res = await gw.request(`/v1/tenants/${gw.admin.tenant_id}/keys`, {
      method: 'POST',
      key: gw.admin.api_key,
      json: { scope: 'root' },
    });
    expect(res.status).toBe(400);
  });
});

describe('per-tenant rate limit', () => {
  it('answers 429 with Retry-After once the tenant exceeds its requests per second, and RateLimit-* on every answer', async () => {
    const free = await gw.onboard('free'); // 5 requests per second
    const responses = await Promise.all(
      Array.from({ length: 20 }, () => gw.request('/v1/recipes', { key: free.api_key })),
    );
    const ok = responses.filter((r) => r.status === 200);
    const limited = responses.filter((r) => r.status === 429);
    expect(ok.length).toBeGreaterThanOrEqual(5);
    expect(limited.length).toBeGreaterThanOrEqual(5);
    expect(ok[0]!.headers.get('ratelimit-limit')).toBe('5');
    expect(Number(limited[0]!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect((await problemOf(limited[0]!)).code).toBe('cairn.ratelimit.exceeded');
  });

  it('keeps tenants apart: one tenant at its limit does not limit another', async () => {
    const a = await gw.onboard('free');
    const b = await gw.onboard('free');
    await Promise.all(Array.from({ length: 15 }, () => gw.request('/v1/recipes', { key: a.api_key })));
    expect((await gw.request('/v1/recipes', { key: b.api_key })).status).toBe(200);
  });
});

describe('the tenant service away', () => {
  let alone: GatewayHarness;
  beforeAll(async () => {
    alone = await startGateway();
  });
  afterAll(() => alone.stop());

  it('a keyed verify and trust-list read answer 503 cairn.unavailable (not a request left hanging) while it is away', async () => {
    const { api_key } = await alone.onboard('developer');
    await alone.tenant.stop();
    // A key the gateway has not seen is checked with the tenant service, which is away.
    const unseen = `${api_key.slice(0, -4)}${api_key.slice(-4) === 'aaaa' ? 'bbbb' : 'aaaa'}`;
    for (const res of [
      await alone.request('/v1/verify', {
        method: 'POST',
        key: unseen,
        json: { asset_id: 'ast_01JAAAAAAAAAAAAAAAAAAAAAAA' },
      }),
      await alone.request('/v1/trust-list', { key: unseen }),
    ]) {
      expect(res.status).toBe(503);
      expect((await problemOf(res)).code).toBe('cairn.unavailable');
    }
  });
});
