import { z } from 'zod';
import { timestampDate, timestampFromDate } from '@bufbuild/protobuf/wkt';
import { parseOrThrow } from '@cairn/errors';
import { parseActorKeyId } from '@cairn/events';
import { tenantV1 } from '@cairn/proto';
import type { ImplOf } from '@cairn/rpc';
import type { KeyRecord, RecipeForPlan, TenantDirectory, TenantRecord } from './app/directory.js';
import { PLANS, PLAN_NAMES, SCOPES, type PlanName } from '@cairn/catalog';

const id = z.string().min(1).max(100);
/** The API key an admin change names as its actor (its audit entry); empty for an operator's direct call. */
const actorKeyId = z
  .string()
  .refine((value) => parseActorKeyId(value) !== undefined, 'must be an API key id')
  .transform((value) => parseActorKeyId(value) ?? null);
const money = z.number().finite().nonnegative().max(1e10);
const subTenantRequest = z.object({
  actorTenantId: id,
  actorKeyId,
  name: z.string().trim().min(1).max(200),
  email: z.string().trim().email().max(254).optional(),
  plan: z.enum(PLAN_NAMES),
  spendingCap: z.object({ usd: money.optional() }).optional(),
});
const keyRequest = z.object({
  actorTenantId: id,
  actorKeyId,
  tenantId: id,
  scope: z.enum(SCOPES),
  description: z.string().trim().max(200).optional(),
});
const settingsRequest = z.object({
  actorTenantId: id,
  actorKeyId,
  tenantId: id,
  auditRetentionDays: z.number().int().min(1).optional(),
  spendingCap: z.object({ usd: money.optional() }).optional(),
});
const onboardRequest = z.object({
  idempotencyKey: z.string().regex(/^[\x21-\x7e]{8,255}$/),
  requestHash: z.string().regex(/^[0-9a-f]{64}$/),
  email: z.string().trim().email().max(254),
  tenantName: z.string().trim().min(1).max(200),
  plan: z.string().max(100),
  paymentMethodId: z.string().trim().min(1).max(255).optional(),
});

/** cairn.tenant.v1.TenantService: the wire mapping of the tenant directory (rules in app/directory.ts). */
// eslint-disable-next-line max-lines-per-function -- the service's handler table: one short mapping per RPC, read whole
export function tenantService(directory: TenantDirectory): ImplOf<typeof tenantV1.TenantService> {
  return {
    getTenant: async (request) => ({ tenant: tenantMessage(await directory.getTenant(id.parse(request.tenantId))) }),
    authenticate: async (request) => {
      const result = await directory.authenticate(request.apiKey.slice(0, 1000));
      if ('error' in result) return { outcome: { case: 'refusal', value: REFUSALS[result.error] } };
      return {
        outcome: {
          case: 'key',
          value: {
            keyId: result.keyId,
            scope: result.scope,
            ...(result.expiresAt ? { expiresAt: timestampFromDate(result.expiresAt) } : {}),
            tenant: tenantMessage(result.tenant),
          },
        },
      };
    },
    getManagedTenant: async (request) => ({
      tenant: tenantMessage(await directory.managed(id.parse(request.actorTenantId), id.parse(request.tenantId))),
    }),
    createSubTenant: async (request) => {
      const input = parseOrThrow(subTenantRequest, request, 'sub-tenant');
      const tenant = await directory.createSubTenant(
        input.actorTenantId,
        {
          name: input.name,
          email: input.email ?? null,
          plan: input.plan,
          ...(input.spendingCap ? { spendingCapUsd: input.spendingCap.usd ?? null } : {}),
        },
        input.actorKeyId,
      );
      return { tenant: tenantMessage(tenant) };
    },
    createKey: async (request) => {
      const input = parseOrThrow(keyRequest, request, 'key');
      const key = await directory.createKey(
        input.actorTenantId,
        input.tenantId,
        {
          scope: input.scope,
          description: input.description ?? null,
          expiresAt: request.expiresAt ? timestampDate(request.expiresAt) : null,
        },
        input.actorKeyId,
      );
      return {
        apiKey: key.api_key,
        key: {
          keyId: key.key_id,
          tenantId: input.tenantId,
          scope: key.scope,
          ...(key.description !== null ? { description: key.description } : {}),
          ...(key.expires_at ? { expiresAt: timestampFromDate(new Date(key.expires_at)) } : {}),
          createdAt: timestampFromDate(new Date(key.created_at)),
        },
      };
    },
    listKeys: async (request) => {
      const keys = await directory.listKeys(id.parse(request.actorTenantId), id.parse(request.tenantId), request.limit);
      return { keys: keys.map(keyMessage) };
    },
    revokeKey: async (request) => ({
      key: keyMessage(
        await directory.revokeKey(
          id.parse(request.actorTenantId),
          id.parse(request.tenantId),
          id.parse(request.keyId),
          parseOrThrow(actorKeyId, request.actorKeyId, 'actor_key_id'),
        ),
      ),
    }),
    updateSettings: async (request) => {
      const input = parseOrThrow(settingsRequest, request, 'settings');
      const tenant = await directory.updateSettings(
        input.actorTenantId,
        input.tenantId,
        {
          auditRetentionDays: input.auditRetentionDays,
          spendingCapUsd: input.spendingCap ? (input.spendingCap.usd ?? null) : undefined,
        },
        input.actorKeyId,
      );
      return { tenant: tenantMessage(tenant) };
    },
    onboard: async (request) => {
      const input = parseOrThrow(onboardRequest, request, 'onboarding');
      const outcome = await directory.onboard(input);
      if (outcome.kind === 'busy')
        return { outcome: { case: 'busyRetryAfterSeconds', value: outcome.retryAfterSeconds }, replayed: false };
      const { answer } = outcome;
      return {
        replayed: outcome.replayed,
        outcome: {
          case: 'answer',
          value: {
            tenantId: answer.tenant_id,
            plan: answer.plan,
            keyId: answer.key_id,
            apiKey: answer.api_key,
            recipeDefaults: answer.recipe_defaults,
            rateLimitRps: answer.rate_limits.rps,
            rateLimitDaily: answer.rate_limits.daily,
          },
        },
      };
    },
    listRecipes: async (request) => ({ recipes: (await directory.listRecipes(request.plan)).map(recipeMessage) }),
    getRecipe: async (request) => ({
      recipe: recipeMessage(await directory.getRecipe(id.parse(request.recipeId), request.plan)),
    }),
  };
}

const REFUSALS = {
  malformed: tenantV1.KeyRefusal.MALFORMED,
  unknown: tenantV1.KeyRefusal.UNKNOWN,
  revoked: tenantV1.KeyRefusal.REVOKED,
  expired: tenantV1.KeyRefusal.EXPIRED,
} as const;

function tenantMessage(tenant: TenantRecord) {
  return {
    tenantId: tenant.tenantId,
    name: tenant.name,
    plan: tenant.plan,
    parentTenantId: tenant.parentTenantId ?? '',
    ...(tenant.spendingCapUsd !== null ? { spendingCapUsd: tenant.spendingCapUsd } : {}),
    auditRetentionDays: tenant.auditRetentionDays,
    auditRetentionDaysMax: PLANS[tenant.plan as PlanName].audit.maxRetentionDays,
    rateLimitRps: tenant.rateLimitRps,
    rateLimitDaily: tenant.rateLimitDaily,
    createdAt: timestampFromDate(tenant.createdAt),
    updatedAt: timestampFromDate(tenant.updatedAt),
  };
}

function keyMessage(key: KeyRecord) {
  return {
    keyId: key.keyId,
    tenantId: key.tenantId,
    scope: key.scope,
    ...(key.description !== null ? { description: key.description } : {}),
    ...(key.expiresAt ? { expiresAt: timestampFromDate(key.expiresAt) } : {}),
    ...(key.revokedAt ? { revokedAt: timestampFromDate(key.revokedAt) } : {}),
    createdAt: timestampFromDate(key.createdAt),
  };
}

function recipeMessage(recipe: RecipeForPlan) {
  return {
    recipeId: recipe.recipe_id,
    name: recipe.name,
    description: recipe.description,
    mediaTypes: recipe.media_types,
    layers: {
      c2pa: recipe.layers.c2pa,
      watermark: recipe.layers.watermark,
      softBinding: recipe.layers.soft_binding,
      anchor: recipe.layers.anchor,
    },
    ai: { digitalSourceType: recipe.ai.digital_source_type, aiGenerated: recipe.ai.ai_generated },
    derivedAssetDays: recipe.retention.derived_asset_days,
    meter: recipe.billing.meter,
    available: recipe.available,
  };
}
