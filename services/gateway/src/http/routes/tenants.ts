import { Router, type Request } from 'express';
import { z } from 'zod';
import { CairnError } from '@cairn/errors';
import { SCOPES } from '../../domain/api-keys.js';
import { PLANS, PLAN_NAMES, type PlanName } from '@cairn/catalog';
import { mayChangeSpendingCap } from '../../domain/tenant-tree.js';
import type { TenantRecord, TenantStore } from '../../store/tenants.js';
import { requireScope } from '../auth.js';
import { presentKey, presentSettings, presentTenant } from '../present.js';
import { jsonBody, queryParams } from '../validate.js';

const money = z.number().finite().nonnegative().max(1e10).multipleOf(0.01, 'at most two decimals');

export const createTenantBody = z.object({
  name: z.string().trim().min(1).max(200),
  email: z.string().trim().email().max(254).optional(),
  plan: z.enum(PLAN_NAMES),
  spending_cap_usd: money.nullable().optional(),
});

export const createKeyBody = z.object({
  scope: z.enum(SCOPES),
  description: z.string().trim().max(200).optional(),
  expires_at: z.string().datetime({ offset: true }).optional(),
});

export const settingsBody = z
  .object({
    audit_retention_days: z.number().int().min(1).optional(),
    spending_cap_usd: money.nullable().optional(),
  })
  .strict()
  .refine((b) => Object.keys(b).length > 0, { message: 'Send at least one of audit_retention_days, spending_cap_usd' });

export const listQuery = z.object({ limit: z.coerce.number().int().min(1).max(100).default(50) });

/** Routes on /v1/tenants: a tenant manages itself and its sub-tenants with an admin key. */
export function tenantRoutes(deps: { store: TenantStore }): Router {
  const router = Router();
  const { store } = deps;
  router.use('/v1/tenants', requireScope('admin'));

  /** The target tenant if the caller manages it; 404 otherwise (never reveal another tenant exists). */
  async function managedTenant(req: Request): Promise<TenantRecord> {
    const actor = req.auth!.tenant;
    const target = await store.findManaged(actor, String(req.params.tenant_id));
    if (!target) throw new CairnError('cairn.not_found', `Tenant ${String(req.params.tenant_id)} not found.`);
    return target;
  }

  router.post('/v1/tenants', async (req, res) => {
    const actor = req.auth!.tenant;
    const body = jsonBody(req, createTenantBody);
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
    if (PLANS[body.plan].rank > actorPlan.rank) {
      throw new CairnError(
        'cairn.tenant.plan_not_allowed',
        `A ${actor.plan} tenant can create sub-tenants on its own plan or a lower one, not ${body.plan}.`,
      );
    }
    // An absent cap means "the parent's"; an explicit null asks for none, which only an uncapped parent allows.
    const tenant = await store.createSubTenant(actor, {
      name: body.name,
      email: body.email ?? null,
      plan: body.plan,
      ...(body.spending_cap_usd !== undefined ? { spendingCapUsd: body.spending_cap_usd } : {}),
    });
    res.status(201).location(`/v1/tenants/${tenant.tenantId}`).json(presentTenant(tenant));
  });

  router.get('/v1/tenants/:tenant_id', async (req, res) => {
    res.json(presentTenant(await managedTenant(req)));
  });

  router.post('/v1/tenants/:tenant_id/keys', async (req, res) => {
    const target = await managedTenant(req);
    const body = jsonBody(req, createKeyBody);
    const expiresAt = body.expires_at ? new Date(body.expires_at) : null;
    if (expiresAt && expiresAt.getTime() <= Date.now())
      throw new CairnError('cairn.validation.invalid_body', 'expires_at must be in the future.', {
        errors: [{ path: 'expires_at', message: 'must be in the future' }],
      });
    const key = await store.createKey(
      target.tenantId,
      { scope: body.scope, description: body.description ?? null, expiresAt },
      req.auth!.tenant.tenantId,
    );
    res.status(201).location(`/v1/tenants/${target.tenantId}/keys/${key.key_id}`).json(key);
  });

  router.get('/v1/tenants/:tenant_id/keys', async (req, res) => {
    const target = await managedTenant(req);
    const { limit } = queryParams(req, listQuery);
    const keys = await store.listKeys(target.tenantId, limit);
    res.json({ data: keys.map(presentKey) });
  });

  router.delete('/v1/tenants/:tenant_id/keys/:key_id', async (req, res) => {
    const target = await managedTenant(req);
    const revoked = await store.revokeKey(target.tenantId, String(req.params.key_id), req.auth!.tenant.tenantId);
    if (!revoked) throw new CairnError('cairn.not_found', `Key ${String(req.params.key_id)} not found.`);
    res.json(presentKey(revoked));
  });

  router.get('/v1/tenants/:tenant_id/settings', async (req, res) => {
    res.json(presentSettings(await managedTenant(req)));
  });

  router.patch('/v1/tenants/:tenant_id/settings', async (req, res) => {
    const target = await managedTenant(req);
    const body = jsonBody(req, settingsBody);
    const plan = PLANS[target.plan as PlanName];
    if (body.audit_retention_days !== undefined && body.audit_retention_days > plan.audit.maxRetentionDays) {
      throw new CairnError(
        'cairn.settings.out_of_range',
        `audit_retention_days on the ${plan.name} plan is at most ${plan.audit.maxRetentionDays}.`,
        {
          errors: [{ path: 'audit_retention_days', message: `at most ${plan.audit.maxRetentionDays} on ${plan.name}` }],
        },
      );
    }
    const actorId = req.auth!.tenant.tenantId;
    if (body.spending_cap_usd !== undefined && !mayChangeSpendingCap(actorId, target)) {
      throw new CairnError(
        'cairn.auth.forbidden',
        `A sub-tenant's spending_cap_usd is set by its parent's admin key, not its own; its other settings stay its own.`,
      );
    }
    const updated = await store.updateSettings(
      target,
      { auditRetentionDays: body.audit_retention_days, spendingCapUsd: body.spending_cap_usd },
      actorId,
    );
    res.json(presentSettings(updated));
  });

  return router;
}
