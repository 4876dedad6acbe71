import type { tenantV1 } from '@cairn/proto';
import type { ApiKeyRecord, Tenant } from '../adapters/tenant-directory.js';
import { keyState } from '@cairn/catalog';

/** The public shapes of the tenant service's records: one place decides field names and what is never shown. */
export function presentTenant(tenant: Tenant) {
  return {
    tenant_id: tenant.tenantId,
    name: tenant.name,
    plan: tenant.plan,
    spending_cap_usd: tenant.spendingCapUsd,
    parent_tenant_id: tenant.parentTenantId,
    created_at: tenant.createdAt.toISOString(),
  };
}

export function presentSettings(tenant: Tenant) {
  return {
    tenant_id: tenant.tenantId,
    plan: tenant.plan,
    audit_retention_days: tenant.auditRetentionDays,
    audit_retention_days_max: tenant.auditRetentionDaysMax,
    spending_cap_usd: tenant.spendingCapUsd,
    rate_limits: { rps: tenant.rateLimitRps, daily: tenant.rateLimitDaily },
    updated_at: tenant.updatedAt.toISOString(),
  };
}

export function presentKey(key: ApiKeyRecord) {
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

/** A key just created: the only answer that ever holds the whole key. */
export function presentNewKey(key: ApiKeyRecord, apiKey: string) {
  return {
    key_id: key.keyId,
    api_key: apiKey,
    scope: key.scope,
    description: key.description,
    expires_at: key.expiresAt?.toISOString() ?? null,
    created_at: key.createdAt.toISOString(),
  };
}

/** A recipe as GET /v1/recipes has always shown it (the tenant service's catalog). */
export function presentRecipe(recipe: tenantV1.Recipe) {
  return {
    recipe_id: recipe.recipeId,
    name: recipe.name,
    description: recipe.description,
    media_types: recipe.mediaTypes,
    layers: {
      c2pa: recipe.layers?.c2pa ?? false,
      watermark: recipe.layers?.watermark ?? false,
      soft_binding: recipe.layers?.softBinding ?? false,
      anchor: recipe.layers?.anchor ?? false,
    },
    ai: { digital_source_type: recipe.ai?.digitalSourceType ?? '', ai_generated: recipe.ai?.aiGenerated ?? false },
    retention: { derived_asset_days: recipe.derivedAssetDays },
    billing: { meter: recipe.meter },
  };
}
