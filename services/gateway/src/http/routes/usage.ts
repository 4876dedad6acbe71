import { Router } from 'express';
import { isoTimestamp } from '@cairn/proto';
import type { BillingClient } from '../../app/metering.js';
import { requireScope } from '../auth.js';
import { json, needsKey, operationsOf } from '../openapi/describe.js';

export const operations = operationsOf('Account', needsKey('read'), {
  getUsage: {
    route: 'get /v1/usage',
    summary: 'Usage and charges this period',
    answers: [json(200, 'Usage', { period_start: '2025-06-01T00:00:00Z', units: { sign: 120, verify: 40 } })],
  },
});

/** GET /v1/usage: the current UTC month's metered use per meter (Usage resource of the spec). */
export function usageRoutes(deps: { billing: BillingClient }): Router {
  const router = Router();
  router.get('/v1/usage', requireScope('read'), async (req, res) => {
    const tenant = req.auth!.tenant;
    const usage = await deps.billing.getUsage({ tenantId: tenant.tenantId, plan: tenant.plan });
    res.set('Cache-Control', 'private, no-store');
    res.json({
      period_start: isoTimestamp(usage.periodStart),
      period_end: isoTimestamp(usage.periodEnd),
      meters: Object.fromEntries(
        usage.meters.map((m) => [
          m.meter,
          {
            used: Number(m.used),
            limit: Number(m.limit),
            ...(m.reserved > 0n ? { reserved: Number(m.reserved) } : {}),
            ...(m.overageUnits > 0n ? { overage: Number(m.overageUnits) } : {}),
          },
        ]),
      ),
      spend_usd: usage.spendUsd,
      spending_cap_usd: tenant.spendingCapUsd ?? null,
    });
  });
  return router;
}
