import { Router } from 'express';
import { z } from 'zod';
import { CairnError } from '@cairn/errors';
import type { PaymentProcessor } from '../../domain/payments.js';
import { PLANS, isPlanName } from '@cairn/catalog';
import { defaultRecipeIds } from '../../domain/recipes.js';
import { requestHash } from '../../domain/request-hash.js';
import { isBrowserLike } from '../../domain/user-agent.js';
import type { TenantStore } from '../../store/tenants.js';
import { jsonBody } from '../validate.js';

export const onboardBody = z.object({
  email: z.string().trim().email().max(254),
  tenant_name: z.string().trim().min(1).max(200),
  plan: z.string(),
  payment_method_id: z.string().trim().min(1).max(255).optional(),
});

const IDEMPOTENCY_KEY = /^[\x21-\x7e]{8,255}$/;

export function onboardRoutes(deps: { store: TenantStore; payments: PaymentProcessor; docsUrl: string }): Router {
  const router = Router();
  router.post('/v1/onboard', async (req, res) => {
    if (
      isBrowserLike({
        userAgent: req.header('user-agent'),
        secFetchSite: req.header('sec-fetch-site'),
        secFetchDest: req.header('sec-fetch-dest'),
        origin: req.header('origin'),
      })
    ) {
      throw new CairnError(
        'cairn.onboard.browser_not_allowed',
        'Self-onboarding is for programmatic clients; sign up in a browser at the Cairn console instead.',
      );
    }
    const idempotencyKey = req.header('idempotency-key');
    if (!idempotencyKey)
      throw new CairnError(
        'cairn.onboard.missing_idempotency_key',
        'Send an Idempotency-Key header (a UUID is best) so a retried onboarding never creates a second tenant.',
      );
    if (!IDEMPOTENCY_KEY.test(idempotencyKey))
      throw new CairnError(
        'cairn.onboard.missing_idempotency_key',
        'Idempotency-Key must be 8 to 255 visible ASCII characters.',
      );
    const body = jsonBody(req, onboardBody);
    if (!isPlanName(body.plan) || !PLANS[body.plan].selfServe) {
      const offered = Object.values(PLANS)
        .filter((p) => p.selfServe)
        .map((p) => p.name);
      throw new CairnError(
        'cairn.onboard.plan_not_available',
        `Plan "${body.plan}" cannot be chosen here; self-serve plans are ${offered.join(', ')}.`,
      );
    }
    const plan = PLANS[body.plan];
    if (plan.requiresPaymentMethod && !body.payment_method_id) {
      throw new CairnError(
        'cairn.onboard.invalid_payment_method',
        `The ${plan.name} plan needs a payment_method_id from the payment processor.`,
      );
    }
    const paymentMethodId = body.payment_method_id;
    const result = await deps.store.onboard({
      idempotencyKey,
      requestHash: requestHash(body),
      tenant: { name: body.tenant_name, email: body.email, plan: plan.name },
      attachPayment: async () => {
        if (!paymentMethodId) return null;
        const outcome = await deps.payments.attachPaymentMethod({
          paymentMethodId,
          email: body.email,
          tenantName: body.tenant_name,
          idempotencyKey,
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
      render: (tenant, key) => ({
        tenant_id: tenant.tenantId,
        plan: tenant.plan,
        key_id: key.key_id,
        api_key: key.api_key,
        recipe_defaults: defaultRecipeIds(plan.name),
        rate_limits: { rps: tenant.rateLimitRps, daily: tenant.rateLimitDaily },
        next_steps_url: `${deps.docsUrl.replace(/\/$/, '')}/quickstart`,
      }),
    });
    if (result.kind === 'busy') {
      res.set('Retry-After', String(result.retryAfterSeconds));
      throw new CairnError(
        'cairn.idempotency.in_progress',
        `An onboarding with this Idempotency-Key is still running; retry after ${result.retryAfterSeconds} s to get its answer.`,
      );
    }
    if (result.replayed) res.set('Idempotent-Replayed', 'true');
    res.status(201).json(result.body);
  });
  return router;
}
