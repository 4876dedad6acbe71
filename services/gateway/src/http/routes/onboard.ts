import { Router } from 'express';
import { z } from 'zod';
import { docsUrl } from '@cairn/config';
import { CairnError } from '@cairn/errors';
import type { TenantDirectory } from '../../adapters/tenant-directory.js';
import { requestHash } from '../../domain/request-hash.js';
import { isBrowserLike } from '../../domain/user-agent.js';
import { jsonBody } from '../validate.js';
import { EXAMPLE, IDEMPOTENCY, json, jsonRequest, operationsOf, PUBLIC } from '../openapi/describe.js';

export const onboardBody = z.object({
  email: z.string().trim().email().max(254),
  tenant_name: z.string().trim().min(1).max(200),
  plan: z.string(),
  payment_method_id: z.string().trim().min(1).max(255).optional(),
});

const IDEMPOTENCY_KEY = /^[\x21-\x7e]{8,255}$/;

export const operations = operationsOf('Tenants', PUBLIC, {
  onboard: {
    route: 'post /v1/onboard',
    summary: 'Create a tenant and its first admin key (self-service)',
    headers: [IDEMPOTENCY],
    body: jsonRequest(onboardBody, {
      email: 'dev@example.com',
      tenant_name: 'Example Studio',
      plan: 'developer',
      payment_method_id: 'pm_card_visa',
    }),
    answers: [
      json(201, 'Tenant created; the API key is shown once', {
        tenant_id: EXAMPLE.tenant,
        api_key: 'ck_live_…',
        plan: 'developer',
      }),
    ],
    errors: [
      'cairn.onboard.browser_not_allowed',
      'cairn.onboard.missing_idempotency_key',
      'cairn.onboard.idempotency_conflict',
      'cairn.onboard.plan_not_available',
      'cairn.onboard.invalid_payment_method',
      'cairn.onboard.payment_declined',
      'cairn.idempotency.in_progress',
      'cairn.ratelimit.exceeded',
      'cairn.unavailable',
    ],
  },
});

export function onboardRoutes(deps: { tenants: TenantDirectory; docsUrl: string }): Router {
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
    // The plan, payment and one-tenant-per-key rules are the tenant service's.
    const result = await deps.tenants.onboard({
      idempotencyKey,
      requestHash: requestHash(body),
      email: body.email,
      tenantName: body.tenant_name,
      plan: body.plan,
      ...(body.payment_method_id ? { paymentMethodId: body.payment_method_id } : {}),
    });
    if (result.outcome.case === 'busyRetryAfterSeconds') {
      const retryAfterSeconds = result.outcome.value;
      res.set('Retry-After', String(retryAfterSeconds));
      throw new CairnError(
        'cairn.idempotency.in_progress',
        `An onboarding with this Idempotency-Key is still running; retry after ${retryAfterSeconds} s to get its answer.`,
      );
    }
    if (result.outcome.case !== 'answer') throw new Error('the tenant service answered an onboarding with nothing');
    const answer = result.outcome.value;
    if (result.replayed) res.set('Idempotent-Replayed', 'true');
    res.status(201).json({
      tenant_id: answer.tenantId,
      plan: answer.plan,
      key_id: answer.keyId,
      api_key: answer.apiKey,
      recipe_defaults: answer.recipeDefaults,
      rate_limits: { rps: answer.rateLimitRps, daily: answer.rateLimitDaily },
      next_steps_url: docsUrl(deps.docsUrl, '/quickstart'),
    });
  });
  return router;
}
