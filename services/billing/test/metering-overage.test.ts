import { afterAll, beforeAll, expect, it } from '@jest/globals';
import { newId } from '@cairn/ids';
import { codeOf, startBilling, type BillingFleet } from './support/billing.js';

let fleet: BillingFleet;
let billing: BillingFleet['billing'];

beforeAll(async () => {
  fleet = await startBilling();
  ({ billing } = fleet);
});
afterAll(() => fleet?.stop());

// Overage paths of the single-statement reserve: the spending cap under concurrency, quantities across the
// quota, release returning spend, enterprise without a contract quota, commit after the expiry sweep.
it('cap holds under concurrency; release returns spend; commit after sweep bills', async () => {
  const tenantId = newId('tenant');
  await billing.setQuota({ tenantId, meter: 'image_sign', quota: 10n });
  // The hundred reserves lock one counter row, so they run one after another, each holding a pooled connection
  // (20) while it waits: on a loaded machine the rest wait for a connection past the pool's 5 s checkout and are
  // answered cairn.unavailable before any work, as any burst beyond the pool is. A client retries those with
  // backoff, and so does this test: what is asserted is where every reserve ends, not how fast.
  const results = await Promise.all(
    Array.from({ length: 100 }, () =>
      untilAvailable(() =>
        codeOf(
          billing.reserve(
            { tenantId, meter: 'image_sign', plan: 'growth', spendingCapUsd: 5 },
            { deadlineMs: 120_000 },
          ),
        ),
      ),
    ),
  );
  // Counted by answer, so a failure shows every code that came back, not only the expected ones.
  const tally: Record<string, number> = {};
  for (const code of results) tally[code] = (tally[code] ?? 0) + 1;
  expect(tally).toEqual({ ok: 20, 'cairn.billing.spending_cap_reached': 80 });
  let u = await billing.getUsage({ tenantId, plan: 'growth' });
  expect(u.spendUsd).toBe(5);
  expect(u.meters.find((m) => m.meter === 'image_sign')).toMatchObject({ reserved: 20n, used: 0n });
  const t2 = newId('tenant');
  const r = await billing.reserve({ tenantId: t2, meter: 'image_sign', plan: 'growth', quantity: 3 });
  expect(r).toMatchObject({ overageUnits: 0n });
  await billing.setQuota({ tenantId: t2, meter: 'lookup', quota: 2n });
  const r2 = await billing.reserve({ tenantId: t2, meter: 'lookup', plan: 'growth', quantity: 5 });
  expect(r2).toMatchObject({ overageUnits: 3n, used: 5n, limit: 2n });
  expect((await billing.getUsage({ tenantId: t2, plan: 'growth' })).spendUsd).toBeCloseTo(0.006);
  await billing.release({ tenantId: t2, reservationId: r2.reservationId });
  expect((await billing.getUsage({ tenantId: t2, plan: 'growth' })).spendUsd).toBe(0);
  const e = await billing.reserve({ tenantId: t2, meter: 'video_sign', plan: 'enterprise', quantity: 2 });
  expect(e).toMatchObject({ overageUnits: 2n, limit: 0n });
  await billing.commit({ tenantId: t2, reservationId: e.reservationId });
  const cap0 = await codeOf(
    billing.reserve({ tenantId: t2, meter: 'video_sign', plan: 'enterprise', spendingCapUsd: 0 }),
  );
  expect(cap0).toBe('cairn.billing.spending_cap_reached');
  // Released by the sweep, then committed: billed all the same.
  const s = await billing.reserve({ tenantId: t2, meter: 'video_sign', plan: 'enterprise' });
  await new Promise((r) => setTimeout(r, 1200));
  expect((await billing.sweepExpired({ olderThanSeconds: 1 })).released).toBeGreaterThanOrEqual(1);
  expect((await billing.commit({ tenantId: t2, reservationId: s.reservationId })).status).toBe('committed');
  u = await billing.getUsage({ tenantId: t2, plan: 'enterprise' });
  expect(u.meters.find((m) => m.meter === 'video_sign')).toMatchObject({ used: 3n, reserved: 0n, overageUnits: 3n });
  expect(u.spendUsd).toBeCloseTo(0.12);
  expect(await codeOf(billing.commit({ tenantId: t2, reservationId: 'rsv_nope' }))).toBe('cairn.not_found');
  expect(await codeOf(billing.release({ tenantId: t2, reservationId: 'rsv_nope' }))).toBe('cairn.not_found');
});

/** Runs `attempt` again while it answers cairn.unavailable (at most 20 times, 100–800 ms apart), as a client does. */
async function untilAvailable(attempt: () => Promise<string>): Promise<string> {
  for (let tries = 0; ; tries++) {
    const code = await attempt();
    if (code !== 'cairn.unavailable' || tries === 20) return code;
    await new Promise((resolve) => setTimeout(resolve, Math.min(800, 100 * 2 ** tries)));
  }
}
