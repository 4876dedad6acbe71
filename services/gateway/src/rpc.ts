import type { GenService } from '@bufbuild/protobuf/codegenv2';
import { CairnError } from '@cairn/errors';
import { gatewayV1 } from '@cairn/proto';
import type { ServiceImpl } from '@cairn/rpc';
import type { TenantStore } from './store/tenants.js';

type TenantServiceMethods = typeof gatewayV1.TenantService extends GenService<infer M> ? M : never;

/** cairn.gateway.v1.TenantService: the tenant directory other services consult (plan, caps, retention). */
export function tenantService(store: TenantStore): ServiceImpl<TenantServiceMethods> {
  return {
    getTenant: async (request) => {
      const tenant = await store.getTenant(request.tenantId);
      if (!tenant) throw new CairnError('cairn.not_found', `Tenant ${request.tenantId} not found`);
      return {
        tenant: {
          tenantId: tenant.tenantId,
          name: tenant.name,
          plan: tenant.plan,
          parentTenantId: tenant.parentTenantId ?? '',
          spendingCapUsd: tenant.spendingCapUsd ?? -1,
          auditRetentionDays: tenant.auditRetentionDays,
          createdAt: tenant.createdAt.toISOString(),
        },
      };
    },
  };
}
