import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { gatewayV1 } from '@cairn/proto';
import { createClient } from '@cairn/rpc';
import { newId } from '@cairn/ids';
import { startGateway, type GatewayHarness } from './harness.js';

let gw: GatewayHarness;
beforeAll(async () => {
  gw = await startGateway();
});
afterAll(() => gw.stop());

describe('cairn.gateway.v1.TenantService over gRPC', () => {
  it('answers a tenant’s plan and settings', async () => {
    const tenant = await gw.onboard('growth');
    const client = createClient(gatewayV1.TenantService, `127.0.0.1:${gw.service.grpcPort}`);
    try {
      const { tenant: found } = await client.getTenant({ tenantId: tenant.tenant_id });
      expect(found).toMatchObject({
        tenantId: tenant.tenant_id,
        plan: 'growth',
        parentTenantId: '',
        auditRetentionDays: 365,
      });
      await expect(client.getTenant({ tenantId: newId('tenant') })).rejects.toMatchObject({
        code: 'cairn.not_found',
        status: 404,
      });
    } finally {
      client.close();
    }
  });

  it('maps an unreachable server to cairn.unavailable after retrying', async () => {
    const client = createClient(gatewayV1.TenantService, '127.0.0.1:1', { retries: 2, deadlineMs: 1500 });
    try {
      await expect(client.getTenant({ tenantId: 't_x' })).rejects.toMatchObject({ code: 'cairn.unavailable' });
    } finally {
      client.close();
    }
  });
});
