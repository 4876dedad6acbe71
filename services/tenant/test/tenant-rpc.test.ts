import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { timestampDate, timestampFromDate } from '@bufbuild/protobuf/wkt';
import { CairnError } from '@cairn/errors';
import { newId } from '@cairn/ids';
import { tenantV1 } from '@cairn/proto';
import { createClient, type ClientOf } from '@cairn/rpc';
import { startService, type RunningService } from '@cairn/runtime';
import { createSandbox, type Sandbox } from '@cairn/testing';
import { tenantService } from '../src/service.js';

let sandbox: Sandbox;
let service: RunningService;
let tenants: ClientOf<typeof tenantV1.TenantService>;

beforeAll(async () => {
  sandbox = await createSandbox();
  service = await startService(tenantService(sandbox.env));
  tenants = createClient(tenantV1.TenantService, `127.0.0.1:${service.grpcPort}`);
});
afterAll(async () => {
  tenants.close();
  await service.stop();
  await sandbox.dispose();
});

/** A tenant changes its own settings (its actor is itself). */
function ownSettings(
  tenant: { tenantId: string },
  settings: { spendingCap?: { usd?: number }; auditRetentionDays?: number },
) {
  return tenants.updateSettings({ actorTenantId: tenant.tenantId, tenantId: tenant.tenantId, ...settings });
}

async function failure(promise: Promise<unknown>): Promise<{ code: string; message: string; errors?: unknown }> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof CairnError)
      return {
        code: error.code,
        message: error.message,
        ...(error.extensions.errors ? { errors: error.extensions.errors } : {}),
      };
    throw error;
  }
  throw new Error('expected a failure');
}

let counter = 0;
async function onboard(plan: 'free' | 'developer' | 'growth') {
  counter += 1;
  const response = await tenants.onboard({
    idempotencyKey: `rpc-test-${sandbox.id}-${counter}`,
    requestHash: 'a'.repeat(64),
    email: `t${counter}@example.com`,
    tenantName: `Tenant ${counter}`,
    plan,
    ...(plan === 'free' ? {} : { paymentMethodId: 'pm_card_visa' }),
  });
  if (response.outcome.case !== 'answer') throw new Error(`onboard: ${response.outcome.case}`);
  return response.outcome.value;
}

describe('cairn.tenant.v1.TenantService', () => {
  it('onboards once per Idempotency-Key and authenticates the admin key it returns', async () => {
    const request = {
      idempotencyKey: `rpc-test-${sandbox.id}-replay`,
      requestHash: 'b'.repeat(64),
      email: 'replay@example.com',
      tenantName: 'Replay',
      plan: 'developer',
      paymentMethodId: 'pm_card_visa',
    };
    const first = await tenants.onboard(request);
    const again = await tenants.onboard(request);
    expect(first.replayed).toBe(false);
    expect(again.replayed).toBe(true);
    expect(again.outcome).toEqual(first.outcome);
    if (first.outcome.case !== 'answer') throw new Error('no answer');
    const answer = first.outcome.value;
    expect(answer).toMatchObject({ plan: 'developer', rateLimitRps: expect.any(Number) });
    expect(answer.recipeDefaults.length).toBeGreaterThan(0);

    const auth = await tenants.authenticate({ apiKey: answer.apiKey });
    expect(auth.outcome.case).toBe('key');
    if (auth.outcome.case !== 'key') return;
    expect(auth.outcome.value).toMatchObject({ keyId: answer.keyId, scope: 'admin' });
    expect(auth.outcome.value.tenant).toMatchObject({ tenantId: answer.tenantId, plan: 'developer' });

    expect(await failure(tenants.onboard({ ...request, requestHash: 'c'.repeat(64) }))).toMatchObject({
      code: 'cairn.onboard.idempotency_conflict',
    });
    expect(
      await failure(tenants.onboard({ ...request, idempotencyKey: `${request.idempotencyKey}-x`, plan: 'enterprise' })),
    ).toMatchObject({
      code: 'cairn.onboard.plan_not_available',
    });
    expect(
      await failure(
        tenants.onboard({
          ...request,
          idempotencyKey: `${request.idempotencyKey}-d`,
          paymentMethodId: 'pm_card_chargeDeclined',
        }),
      ),
    ).toMatchObject({ code: 'cairn.onboard.payment_declined' });
  });

  it('refuses malformed, unknown and revoked keys as answers, and never tells unknown from a wrong secret', async () => {
    const owner = await onboard('growth');
    const refusal = async (apiKey: string) => {
      const { outcome } = await tenants.authenticate({ apiKey });
      return outcome.case === 'refusal' ? outcome.value : outcome.case;
    };
    expect(await refusal('not a key')).toBe(tenantV1.KeyRefusal.MALFORMED);
    expect(await refusal(`${owner.apiKey.slice(0, -4)}AAAA`)).toBe(tenantV1.KeyRefusal.UNKNOWN);

    const created = await tenants.createKey({ actorTenantId: owner.tenantId, tenantId: owner.tenantId, scope: 'sign' });
    expect(created.key).toMatchObject({ scope: 'sign', tenantId: owner.tenantId });
    expect(await refusal(created.apiKey)).toBe('key');
    const revoked = await tenants.revokeKey({
      actorTenantId: owner.tenantId,
      tenantId: owner.tenantId,
      keyId: created.key!.keyId,
    });
    expect(revoked.key?.revokedAt).toBeDefined();
    expect(await refusal(created.apiKey)).toBe(tenantV1.KeyRefusal.REVOKED);

    const listed = await tenants.listKeys({ actorTenantId: owner.tenantId, tenantId: owner.tenantId, limit: 10 });
    expect(listed.keys.map((k) => k.keyId)).toEqual([created.key!.keyId, owner.keyId]);
  });

  it('carries an expiring key’s expiry with its authentication, and refuses a past one', async () => {
    const owner = await onboard('developer');
    const expiresAt = new Date(Date.now() + 3_600_000);
    const created = await tenants.createKey({
      actorTenantId: owner.tenantId,
      tenantId: owner.tenantId,
      scope: 'read',
      expiresAt: timestampFromDate(expiresAt),
    });
    const { outcome } = await tenants.authenticate({ apiKey: created.apiKey });
    expect(
      outcome.case === 'key' && outcome.value.expiresAt && timestampDate(outcome.value.expiresAt).toISOString(),
    ).toBe(expiresAt.toISOString());
    expect(
      await failure(
        tenants.createKey({
          actorTenantId: owner.tenantId,
          tenantId: owner.tenantId,
          scope: 'read',
          expiresAt: timestampFromDate(new Date(Date.now() - 1000)),
        }),
      ),
    ).toMatchObject({
      code: 'cairn.validation.invalid_body',
      errors: [{ path: 'expires_at', message: 'must be in the future' }],
    });
  });

  it('keeps the tenant tree: sub-tenants under a growth parent, caps under the parent’s, other tenants invisible', async () => {
    const parent = await onboard('growth');
    const stranger = await onboard('growth');
    await ownSettings(parent, { spendingCap: { usd: 100 } });
    const { tenant: child } = await tenants.createSubTenant({
      actorTenantId: parent.tenantId,
      name: 'Child',
      plan: 'developer',
    });
    expect(child).toMatchObject({ parentTenantId: parent.tenantId, plan: 'developer', spendingCapUsd: 100 });
    expect(
      await failure(
        tenants.createSubTenant({
          actorTenantId: parent.tenantId,
          name: 'Too much',
          plan: 'developer',
          spendingCap: { usd: 150 },
        }),
      ),
    ).toMatchObject({
      code: 'cairn.tenant.spending_cap_above_parent',
      errors: [{ path: 'spending_cap_usd', message: "at most 100.00 (the parent's cap)" }],
    });
    expect(
      await failure(tenants.createSubTenant({ actorTenantId: parent.tenantId, name: 'Up', plan: 'enterprise' })),
    ).toMatchObject({
      code: 'cairn.tenant.plan_not_allowed',
    });
    const developer = await onboard('developer');
    expect(
      await failure(tenants.createSubTenant({ actorTenantId: developer.tenantId, name: 'No', plan: 'free' })),
    ).toMatchObject({
      code: 'cairn.tenant.subtenants_not_available',
    });

    // The parent lowers its cap: the child's follows in the same transaction.
    await ownSettings(parent, { spendingCap: { usd: 40 } });
    const { tenant: lowered } = await tenants.getManagedTenant({
      actorTenantId: parent.tenantId,
      tenantId: child!.tenantId,
    });
    expect(lowered?.spendingCapUsd).toBe(40);
    // The child may not change its own cap; it may change its retention, within its plan.
    expect(await failure(ownSettings(child!, { spendingCap: {} }))).toMatchObject({
      code: 'cairn.auth.forbidden',
    });
    expect(await failure(ownSettings(child!, { auditRetentionDays: 400 }))).toMatchObject({
      code: 'cairn.settings.out_of_range',
      errors: [{ path: 'audit_retention_days', message: 'at most 30 on developer' }],
    });

    // Thunks: each call starts only when awaited, so no refusal is ever left unhandled meanwhile.
    for (const call of [
      () => tenants.getManagedTenant({ actorTenantId: stranger.tenantId, tenantId: parent.tenantId }),
      () => tenants.listKeys({ actorTenantId: stranger.tenantId, tenantId: child!.tenantId, limit: 5 }),
      () => tenants.createKey({ actorTenantId: child!.tenantId, tenantId: parent.tenantId, scope: 'admin' }),
      () => tenants.revokeKey({ actorTenantId: stranger.tenantId, tenantId: parent.tenantId, keyId: parent.keyId }),
    ])
      expect(await failure(call())).toMatchObject({ code: 'cairn.not_found' });
  });

  it('answers a tenant’s plan and settings to billing and audit, and NOT_FOUND for an unknown one', async () => {
    const owner = await onboard('growth');
    const { tenant } = await tenants.getTenant({ tenantId: owner.tenantId });
    expect(tenant).toMatchObject({
      tenantId: owner.tenantId,
      plan: 'growth',
      parentTenantId: '',
      auditRetentionDays: 365,
      auditRetentionDaysMax: 365,
    });
    expect(tenant?.spendingCapUsd).toBeUndefined();
    expect(await failure(tenants.getTenant({ tenantId: newId('tenant') }))).toMatchObject({ code: 'cairn.not_found' });
  });

  it('lists the recipe catalog with availability for the asking plan', async () => {
    const { recipes } = await tenants.listRecipes({ plan: 'free' });
    expect(recipes.map((r) => r.recipeId)).toContain('image-genai-v1');
    const video = recipes.find((r) => r.recipeId === 'video-genai-v1');
    expect(video).toMatchObject({ meter: 'video_sign', layers: { c2pa: true, watermark: true } });
    const { recipe } = await tenants.getRecipe({ recipeId: 'image-genai-v1', plan: 'growth' });
    expect(recipe).toMatchObject({ available: true, mediaTypes: ['image/jpeg', 'image/png', 'image/webp'] });
    expect(await failure(tenants.getRecipe({ recipeId: 'nope-v1', plan: 'growth' }))).toMatchObject({
      code: 'cairn.not_found',
    });
  });
});
