import { PLANS, type PlanName } from '@cairn/catalog';
import type { KeyRecord, TenantRecord } from '../store/tenants.js';
import { keyState } from '../domain/api-keys.js';

/** The public shapes of stored records: one place decides field names and what is never shown. */
export function presentTenant(tenant: TenantRecord) {
  return {
    tenant_id: tenant.tenantId,
    name: tenant.name,
    plan: tenant.plan,
    spending_cap_usd: tenant.spendingCapUsd,
    parent_tenant_id: tenant.parentTenantId,
    created_at: tenant.createdAt.toISOString(),
  };
}

export function presentSettings(tenant: TenantRecord) {
  const plan = PLANS[tenant.plan as PlanName];
  return {
    tenant_id: tenant.tenantId,
    plan: tenant.plan,
    audit_retention_days: tenant.auditRetentionDays,
    audit_retention_days_max: plan.audit.maxRetentionDays,
    spending_cap_usd: tenant.spendingCapUsd,
    rate_limits: { rps: tenant.rateLimitRps, daily: tenant.rateLimitDaily },
    updated_at: tenant.updatedAt.toISOString(),
  };
}

export function presentKey(key: KeyRecord) {
  return {
    key_id: key.keyId,
    scope: key.scope,
    description: key.description,
    status: keyState(key),
    created_at: key.createdAt.toISOString(),
    expires_at: key.expiresAt?.toISOString() ?? null,
    revoked_at: key.revokedAt?.toISOString() ?? null,
  };
}
