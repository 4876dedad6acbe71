import { Router, type Request } from 'express';
import { z } from 'zod';
import type { TenantDirectory } from '../../adapters/tenant-directory.js';
import { PLAN_NAMES, SCOPES } from '@cairn/catalog';
import { requireScope } from '../auth.js';
import { presentKey, presentNewKey, presentSettings, presentTenant } from '../present.js';
import { jsonBody, queryParams } from '../validate.js';
import { EXAMPLE, json, jsonRequest, needsKey, noContent, NOT_FOUND, operationsOf } from '../openapi/describe.js';

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

export const operations = operationsOf('Tenants', needsKey('admin'), {
  createSubTenant: {
    route: 'post /v1/tenants',
    summary: 'Create a sub-tenant',
    body: jsonRequest(createTenantBody, { name: 'Newsroom EU', plan: 'growth', spending_cap_usd: 500 }),
    answers: [
      json(201, 'The sub-tenant', {
        tenant_id: 'ten_01JBZ3Q8M6V4W2X9Y7T5R3N1PQ',
        name: 'Newsroom EU',
        plan: 'growth',
      }),
    ],
    errors: [
      'cairn.tenant.subtenants_not_available',
      'cairn.tenant.plan_not_allowed',
      'cairn.tenant.spending_cap_above_parent',
    ],
  },
  getTenant: {
    route: 'get /v1/tenants/:tenant_id',
    summary: 'Read a tenant you manage',
    answers: [json(200, 'The tenant', { tenant_id: EXAMPLE.tenant, name: 'Example Studio', plan: 'developer' })],
    errors: NOT_FOUND,
  },
  createApiKey: {
    route: 'post /v1/tenants/:tenant_id/keys',
    summary: 'Create an API key',
    body: jsonRequest(createKeyBody, { scope: 'sign', description: 'CI pipeline' }),
    answers: [
      json(201, 'The key; its secret is shown once', {
        key_id: 'key_01JBZ3Q8M6V4W2X9Y7T5R3N1PK',
        scope: 'sign',
        api_key: 'ck_live_…',
      }),
    ],
    errors: NOT_FOUND,
  },
  listApiKeys: {
    route: 'get /v1/tenants/:tenant_id/keys',
    summary: 'List API keys',
    query: listQuery,
    answers: [
      json(200, 'The keys (no secrets)', { keys: [{ key_id: 'key_01JBZ3Q8M6V4W2X9Y7T5R3N1PK', scope: 'sign' }] }),
    ],
    errors: NOT_FOUND,
  },
  revokeApiKey: {
    route: 'delete /v1/tenants/:tenant_id/keys/:key_id',
    summary: 'Revoke an API key',
    answers: [noContent],
    errors: NOT_FOUND,
  },
  getTenantSettings: {
    route: 'get /v1/tenants/:tenant_id/settings',
    summary: 'Read tenant settings',
    answers: [json(200, 'The settings', { audit_retention_days: 365, spending_cap_usd: null })],
    errors: NOT_FOUND,
  },
  updateTenantSettings: {
    route: 'patch /v1/tenants/:tenant_id/settings',
    summary: 'Change tenant settings',
    body: jsonRequest(settingsBody, { audit_retention_days: 730 }),
    answers: [json(200, 'The settings', { audit_retention_days: 730, spending_cap_usd: null })],
    errors: ['cairn.not_found', 'cairn.settings.out_of_range', 'cairn.tenant.spending_cap_above_parent'],
  },
});

/** Routes on /v1/tenants: a tenant manages itself and its sub-tenants with an admin key (rules: the tenant service). */
export function tenantRoutes(deps: { tenants: TenantDirectory }): Router {
  const router = Router();
  const { tenants } = deps;
  router.use('/v1/tenants', requireScope('admin'));

  const actorOf = (req: Request) => req.auth!.tenant.tenantId;
  /** The key making the change: the tenant service records it as the actor of the change's audit entry. */
  const actorKeyOf = (req: Request) => req.auth!.keyId;
  const targetOf = (req: Request) => String(req.params.tenant_id);

  router.post('/v1/tenants', async (req, res) => {
    const body = jsonBody(req, createTenantBody);
    // An absent cap means "the parent's"; an explicit null asks for none, which only an uncapped parent allows.
    const tenant = await tenants.createSubTenant(
      actorOf(req),
      {
        name: body.name,
        email: body.email ?? null,
        plan: body.plan,
        spendingCapUsd: body.spending_cap_usd,
      },
      actorKeyOf(req),
    );
    res.status(201).location(`/v1/tenants/${tenant.tenantId}`).json(presentTenant(tenant));
  });

  router.get('/v1/tenants/:tenant_id', async (req, res) => {
    res.json(presentTenant(await tenants.managed(actorOf(req), targetOf(req))));
  });

  router.post('/v1/tenants/:tenant_id/keys', async (req, res) => {
    const body = jsonBody(req, createKeyBody);
    const { key, apiKey } = await tenants.createKey(
      actorOf(req),
      targetOf(req),
      {
        scope: body.scope,
        description: body.description ?? null,
        expiresAt: body.expires_at ? new Date(body.expires_at) : null,
      },
      actorKeyOf(req),
    );
    res.status(201).location(`/v1/tenants/${key.tenantId}/keys/${key.keyId}`).json(presentNewKey(key, apiKey));
  });

  router.get('/v1/tenants/:tenant_id/keys', async (req, res) => {
    const { limit } = queryParams(req, listQuery);
    const keys = await tenants.listKeys(actorOf(req), targetOf(req), limit);
    res.json({ data: keys.map(presentKey) });
  });

  router.delete('/v1/tenants/:tenant_id/keys/:key_id', async (req, res) => {
    const revoked = await tenants.revokeKey(actorOf(req), targetOf(req), String(req.params.key_id), actorKeyOf(req));
    res.json(presentKey(revoked));
  });

  router.get('/v1/tenants/:tenant_id/settings', async (req, res) => {
    res.json(presentSettings(await tenants.managed(actorOf(req), targetOf(req))));
  });

  router.patch('/v1/tenants/:tenant_id/settings', async (req, res) => {
    const body = jsonBody(req, settingsBody);
    const updated = await tenants.updateSettings(
      actorOf(req),
      targetOf(req),
      {
        auditRetentionDays: body.audit_retention_days,
        spendingCapUsd: body.spending_cap_usd,
      },
      actorKeyOf(req),
    );
    res.json(presentSettings(updated));
  });

  return router;
}
