import { z } from 'zod';
import { CairnError } from '@cairn/errors';
import { PLANS, isPlanName, type PlanName, type Scope } from '@cairn/catalog';
import { defaultRecipeIds, recipeAvailable, type Recipe } from '../domain/recipes.js';
import { mayChangeSpendingCap, type SpendingCap } from '../domain/tenant-tree.js';
import type { KeyRecord, NewKey, PaymentProcessor, Recipes, TenantRecord, Tenants } from './ports.js';

export type { KeyRecord, TenantRecord };

/** What a new self-onboarded tenant learns; sealed as JSON for replays (snake_case, as the public answer). */
export interface OnboardAnswer {
  tenant_id: string;
  plan: string;
  key_id: string;
  api_key: string;
  recipe_defaults: string[];
  rate_limits: { rps: number; daily: number };
}

export interface OnboardInput {
  idempotencyKey: string;
  requestHash: string;
  email: string;
  tenantName: string;
  plan: string;
  paymentMethodId?: string | undefined;
}

export type OnboardOutcome =
  { kind: 'answer'; replayed: boolean; answer: OnboardAnswer } | { kind: 'busy'; retryAfterSeconds: number };

export interface RecipeForPlan extends Recipe {
  available: boolean;
}

/**
 * The tenant system's use cases: authentication, the tenant tree (who may manage, create and cap whom),
 * keys, settings, self-onboarding with the payment processor, and the recipe catalog. The rules live here so
 * every caller (the gateway's routes, the operator CLI) gets the same answers; storage is the stores'.
 */
export class TenantDirectory {
  constructor(private readonly deps: { store: Tenants; recipes: Recipes; payments: PaymentProcessor }) {}

  authenticate(apiKey: string): ReturnType<Tenants['authenticate']> {
    return this.deps.store.authenticate(apiKey);
  }

  async getTenant(tenantId: string): Promise<TenantRecord> {
    const tenant = await this.deps.store.getTenant(tenantId);
    if (!tenant) throw new CairnError('cairn.not_found', `Tenant ${tenantId} not found`);
    return tenant;
  }

  /** The target tenant if the actor manages it; 404 otherwise (never reveal another tenant exists). */
  async managed(actorTenantId: string, tenantId: string): Promise<TenantRecord> {
    const target = await this.deps.store.findManaged(actorTenantId, tenantId);
    if (!target) throw new CairnError('cairn.not_found', `Tenant ${tenantId} not found.`);
    return target;
  }

  /** An absent cap means "the parent's"; null asks for none, which only an uncapped parent allows. */
  async createSubTenant(
    actorTenantId: string,
    input: { name: string; email: string | null; plan: PlanName; spendingCapUsd?: SpendingCap },
    actorKeyId: string | null = null,
  ): Promise<TenantRecord> {
    const actor = await this.getTenant(actorTenantId);
    if (actor.parentTenantId)
      throw new CairnError('cairn.auth.forbidden', 'Sub-tenants cannot create sub-tenants of their own.');
    const actorPlan = PLANS[actor.plan as PlanName];
    if (!actorPlan.subTenants) {
      const offered = Object.values(PLANS)
        .filter((p) => p.subTenants)
        .map((p) => p.name);
      throw new CairnError(
        'cairn.tenant.subtenants_not_available',
        `The ${actorPlan.name} plan does not include sub-tenants (each would get its own quotas); they come with ${offered.join(' and ')}.`,
      );
    }
    if (PLANS[input.plan].rank > actorPlan.rank) {
      throw new CairnError(
        'cairn.tenant.plan_not_allowed',
        `A ${actor.plan} tenant can create sub-tenants on its own plan or a lower one, not ${input.plan}.`,
      );
    }
    return this.deps.store.createSubTenant(
      actor.tenantId,
      {
        name: input.name,
        email: input.email,
        plan: input.plan,
        ...(input.spendingCapUsd !== undefined ? { spendingCapUsd: input.spendingCapUsd } : {}),
      },
      actorKeyId,
    );
  }

  async createKey(
    actorTenantId: string,
    tenantId: string,
    input: { scope: Scope; description: string | null; expiresAt: Date | null },
    actorKeyId: string | null = null,
  ): Promise<NewKey> {
    const target = await this.managed(actorTenantId, tenantId);
    if (input.expiresAt && input.expiresAt.getTime() <= Date.now())
      throw new CairnError('cairn.validation.invalid_body', 'expires_at must be in the future.', {
        errors: [{ path: 'expires_at', message: 'must be in the future' }],
      });
    return this.deps.store.createKey(target.tenantId, input, actorTenantId, actorKeyId);
  }

  async listKeys(actorTenantId: string, tenantId: string, limit: number): Promise<KeyRecord[]> {
    const target = await this.managed(actorTenantId, tenantId);
    return this.deps.store.listKeys(target.tenantId, Math.min(100, Math.max(1, limit)));
  }

  async revokeKey(
    actorTenantId: string,
    tenantId: string,
    keyId: string,
    actorKeyId: string | null = null,
  ): Promise<KeyRecord> {
    const target = await this.managed(actorTenantId, tenantId);
    const revoked = await this.deps.store.revokeKey(target.tenantId, keyId, actorTenantId, actorKeyId);
    if (!revoked) throw new CairnError('cairn.not_found', `Key ${keyId} not found.`);
    return revoked;
  }

  async updateSettings(
    actorTenantId: string,
    tenantId: string,
    patch: { auditRetentionDays?: number | undefined; spendingCapUsd?: SpendingCap | undefined },
    actorKeyId: string | null = null,
  ): Promise<TenantRecord> {
    const target = await this.managed(actorTenantId, tenantId);
    const plan = PLANS[target.plan as PlanName];
    if (patch.auditRetentionDays !== undefined && patch.auditRetentionDays > plan.audit.maxRetentionDays) {
      throw new CairnError(
        'cairn.settings.out_of_range',
        `audit_retention_days on the ${plan.name} plan is at most ${plan.audit.maxRetentionDays}.`,
        {
          errors: [{ path: 'audit_retention_days', message: `at most ${plan.audit.maxRetentionDays} on ${plan.name}` }],
        },
      );
    }
    if (patch.spendingCapUsd !== undefined && !mayChangeSpendingCap(actorTenantId, target)) {
      throw new CairnError(
        'cairn.auth.forbidden',
        `A sub-tenant's spending_cap_usd is set by its parent's admin key, not its own; its other settings stay its own.`,
      );
    }
    return this.deps.store.updateSettings(
      target,
      { auditRetentionDays: patch.auditRetentionDays, spendingCapUsd: patch.spendingCapUsd },
      actorTenantId,
      actorKeyId,
    );
  }

  /** Self-onboarding: a self-serve plan, its payment method attached once, one tenant per Idempotency-Key. */
  async onboard(input: OnboardInput): Promise<OnboardOutcome> {
    if (!isPlanName(input.plan) || !PLANS[input.plan].selfServe) {
      const offered = Object.values(PLANS)
        .filter((p) => p.selfServe)
        .map((p) => p.name);
      throw new CairnError(
        'cairn.onboard.plan_not_available',
        `Plan "${input.plan}" cannot be chosen here; self-serve plans are ${offered.join(', ')}.`,
      );
    }
    const plan = PLANS[input.plan];
    if (plan.requiresPaymentMethod && !input.paymentMethodId) {
      throw new CairnError(
        'cairn.onboard.invalid_payment_method',
        `The ${plan.name} plan needs a payment_method_id from the payment processor.`,
      );
    }
    const paymentMethodId = input.paymentMethodId;
    const result = await this.deps.store.onboard({
      idempotencyKey: input.idempotencyKey,
      requestHash: input.requestHash,
      tenant: { name: input.tenantName, email: input.email, plan: plan.name },
      attachPayment: async () => {
        if (!paymentMethodId) return null;
        const outcome = await this.deps.payments.attachPaymentMethod({
          paymentMethodId,
          email: input.email,
          tenantName: input.tenantName,
          idempotencyKey: input.idempotencyKey,
        });
        if (outcome.ok) return outcome.customerRef;
        if (outcome.reason === 'malformed')
          throw new CairnError('cairn.onboard.invalid_payment_method', outcome.message);
        if (outcome.reason === 'declined') throw new CairnError('cairn.onboard.payment_declined', outcome.message);
        throw new CairnError(
          'cairn.unavailable',
          'The payment processor is unavailable; retry with the same Idempotency-Key.',
        );
      },
      render: (tenant, key) =>
        ({
          tenant_id: tenant.tenantId,
          plan: tenant.plan,
          key_id: key.key_id,
          api_key: key.api_key,
          recipe_defaults: defaultRecipeIds(plan.name),
          rate_limits: { rps: tenant.rateLimitRps, daily: tenant.rateLimitDaily },
        }) satisfies OnboardAnswer,
    });
    if (result.kind === 'busy') return result;
    return { kind: 'answer', replayed: result.replayed, answer: onboardAnswer(result.body) };
  }

  async listRecipes(plan: string): Promise<RecipeForPlan[]> {
    const recipes = await this.deps.recipes.list();
    return recipes.map((recipe) => ({ ...recipe, available: isPlanName(plan) && recipeAvailable(recipe, plan) }));
  }

  async getRecipe(recipeId: string, plan: string): Promise<RecipeForPlan> {
    const recipe = await this.deps.recipes.get(recipeId);
    if (!recipe) throw new CairnError('cairn.not_found', `Recipe ${recipeId} does not exist.`);
    return { ...recipe, available: isPlanName(plan) && recipeAvailable(recipe, plan) };
  }
}

/**
 * A sealed answer read back. Answers sealed by the gateway before the tenant service existed hold the whole
 * public body (next_steps_url too, which the gateway now adds itself): only the fields below are taken.
 */
const sealedAnswer = z.object({
  tenant_id: z.string(),
  plan: z.string(),
  key_id: z.string(),
  api_key: z.string(),
  recipe_defaults: z.array(z.string()),
  rate_limits: z.object({ rps: z.number().int(), daily: z.number().int() }),
});

function onboardAnswer(body: Record<string, unknown>): OnboardAnswer {
  return sealedAnswer.parse(body);
}
