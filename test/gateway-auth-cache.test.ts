/**
 * The gateway authenticates through the tenant service and keeps a successful authentication for
 * AUTH_CACHE_TTL_MS. A key revoked through a gateway stops working there at once; through another replica,
 * it stops working on this one within the TTL (README, docs/decisions/0037-tenant-service.md).
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { RunningService } from '@cairn/runtime';
import { apiRequester, type ApiRequest } from '@cairn/testing';
import { startFleetService } from './support/stack.js';
import { startGateway, type GatewayHarness } from './support/gateway.js';

const TTL_MS = 1500;
let gw: GatewayHarness;
let replica: RunningService;
let viaReplica: ApiRequest;
let admin: { tenant_id: string; api_key: string };

beforeAll(async () => {
  gw = await startGateway({ AUTH_CACHE_TTL_MS: String(TTL_MS) });
  replica = await startFleetService('gateway', {
    ...gw.sandbox.env,
    TENANT_GRPC_ADDR: `127.0.0.1:${gw.tenant.grpcPort}`,
  });
  viaReplica = apiRequester(`http://127.0.0.1:${replica.endpoints.http}`);
  admin = await gw.onboard('developer');
});
afterAll(async () => {
  await replica.stop();
  await gw.stop();
});

async function mintKey(): Promise<{ key_id: string; api_key: string }> {
  const res = await gw.request(`/v1/tenants/${admin.tenant_id}/keys`, {
    method: 'POST',
    key: admin.api_key,
    json: { scope: 'read' },
  });
  expect(res.status).toBe(201);
  return (await res.json()) as { key_id: string; api_key: string };
}

const revoke = (request: ApiRequest, keyId: string) =>
  request(`/v1/tenants/${admin.tenant_id}/keys/${keyId}`, { method: 'DELETE', key: admin.api_key });

describe('authentication through the tenant service, cached briefly', () => {
  it('refuses a key revoked through this gateway at once, although it authenticated a moment before', async () => {
    const key = await mintKey();
    expect((await gw.request('/v1/recipes', { key: key.api_key })).status).toBe(200);
    expect((await revoke(gw.request, key.key_id)).status).toBe(200);
    const after = await gw.request('/v1/recipes', { key: key.api_key });
    expect(after.status).toBe(401);
    expect(((await after.json()) as { detail: string }).detail).toBe('The API key has been revoked.');
  });

  it('refuses a key revoked through another replica once the cache TTL has passed', async () => {
    const key = await mintKey();
    expect((await gw.request('/v1/recipes', { key: key.api_key })).status).toBe(200);
    expect((await revoke(viaReplica, key.key_id)).status).toBe(200);
    // The replica that revoked it refuses it at once; this one within the TTL, whatever it had cached.
    expect((await viaReplica('/v1/recipes', { key: key.api_key })).status).toBe(401);
    await new Promise((resolve) => setTimeout(resolve, TTL_MS + 200));
    expect((await gw.request('/v1/recipes', { key: key.api_key })).status).toBe(401);
  });

  it('answers a burst of requests with one key, and never caches a refusal', async () => {
    const key = await mintKey();
    const answers = await Promise.all(
      Array.from({ length: 4 }, () => gw.request(`/v1/tenants/${admin.tenant_id}`, { key: admin.api_key })),
    );
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    // A new key works at once: refusals are never cached.
    expect((await gw.request('/v1/recipes', { key: `${key.api_key.slice(0, -2)}xx` })).status).toBe(401);
    expect((await gw.request('/v1/recipes', { key: key.api_key })).status).toBe(200);
  });
});
