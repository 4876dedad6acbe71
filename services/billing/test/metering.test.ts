import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { isoTimestamp } from '@cairn/proto';
import { newId } from '@cairn/ids';
import { type Sandbox } from '@cairn/testing';
import { codeOf, startBilling, type BillingFleet } from './support/billing.js';

let fleet: BillingFleet;
let sandbox: Sandbox;
let billing: BillingFleet['billing'];
let admin: pg.Client;

beforeAll(async () => {
  fleet = await startBilling();
  ({ sandbox, billing } = fleet);
  admin = await sandbox.adminClient();
});

afterAll(async () => {
  await admin?.end();
  await fleet?.stop();
});

async function alertEvents(tenantId: string): Promise<Array<{ type: string; data: Record<string, unknown> }>> {
  const rows = await admin.query<{ envelope: { type: string; data: Record<string, unknown> } }>(
    `select envelope from billing.outbox where envelope->>'tenant_id' = $1 order by seq`,
    [tenantId],
  );
  return rows.rows.map((r) => r.envelope);
}

const usageOf = async (tenantId: string, plan: string, meter: string) =>
  (await billing.getUsage({ tenantId, plan })).meters.find((m) => m.meter === meter);

describe('billing metering', () => {
  it('200 concurrent reserves at the quota boundary never pass the limit', async () => {
    const tenantId = newId('tenant');
    await billing.setQuota({ tenantId, meter: 'image_sign', quota: 150n });
    // A reserve that got no database connection in time (cairn.unavailable on a loaded machine) is retried with its
    // own reservation id, as a client retries a 503: what counts is where every answer lands, not how soon.
    const reserveUntilAnswered = async (): Promise<string> => {
      const reservationId = `rsv_${crypto.randomUUID()}`;
      let code = 'cairn.unavailable';
      for (let attempt = 0; attempt < 20 && code === 'cairn.unavailable'; attempt++)
        code = await codeOf(
          billing.reserve({ tenantId, meter: 'image_sign', plan: 'developer', quantity: 1, reservationId }),
        );
      return code;
    };
    const results = await Promise.all(Array.from({ length: 200 }, reserveUntilAnswered));
    expect(results.filter((r) => r === 'ok')).toHaveLength(150);
    expect(results.filter((r) => r === 'cairn.billing.quota_exceeded')).toHaveLength(50);
    const usage = await usageOf(tenantId, 'developer', 'image_sign');
    expect(usage).toMatchObject({ used: 0n, reserved: 150n, limit: 150n });
  });

  it('reserved and committed count together; release frees the unit; commit is idempotent', async () => {
    const tenantId = newId('tenant');
    await billing.setQuota({ tenantId, meter: 'image_sign', quota: 2n });
    const a = await billing.reserve({ tenantId, meter: 'image_sign', plan: 'developer' });
    const b = await billing.reserve({ tenantId, meter: 'image_sign', plan: 'developer' });
    await billing.commit({ tenantId, reservationId: a.reservationId });
    await billing.commit({ tenantId, reservationId: a.reservationId });
    expect(await codeOf(billing.reserve({ tenantId, meter: 'image_sign', plan: 'developer' }))).toBe(
      'cairn.billing.quota_exceeded',
    );
    expect((await billing.release({ tenantId, reservationId: b.reservationId })).status).toBe('released');
    expect((await billing.release({ tenantId, reservationId: a.reservationId })).status).toBe('committed');
    const c = await billing.reserve({ tenantId, meter: 'image_sign', plan: 'developer' });
    await billing.commit({ tenantId, reservationId: c.reservationId });
    expect(await usageOf(tenantId, 'developer', 'image_sign')).toMatchObject({ used: 2n, reserved: 0n, limit: 2n });
  });

  it('a caller-chosen reservation id reserves once', async () => {
    const tenantId = newId('tenant');
    const reservationId = `rsv_${crypto.randomUUID()}`;
    await billing.reserve({ tenantId, meter: 'lookup', plan: 'free', reservationId });
    await billing.reserve({ tenantId, meter: 'lookup', plan: 'free', reservationId });
    expect(await usageOf(tenantId, 'free', 'lookup')).toMatchObject({ reserved: 1n, limit: 100n });
  });

  it('the free plan refuses meters it does not offer', async () => {
    expect(await codeOf(billing.reserve({ tenantId: newId('tenant'), meter: 'audio_sign', plan: 'free' }))).toBe(
      'cairn.billing.quota_exceeded',
    );
  });

  it('plan quotas are the spec table', async () => {
    const usage = await billing.getUsage({ tenantId: newId('tenant'), plan: 'growth' });
    const limits = Object.fromEntries(usage.meters.map((m) => [m.meter, Number(m.limit)]));
    expect(limits).toMatchObject({
      image_sign: 20_000,
      audio_sign: 10_000,
      video_sign: 5_000,
      image_verify: 50_000,
      lookup: 50_000,
    });
    const free = Object.fromEntries(
      (await billing.getUsage({ tenantId: newId('tenant'), plan: 'free' })).meters.map((m) => [
        m.meter,
        Number(m.limit),
      ]),
    );
    expect(free).toEqual({ image_sign: 50, image_verify: 100, lookup: 100 });
    const usageDates = await billing.getUsage({ tenantId: newId('tenant'), plan: 'free' });
    const now = new Date();
    expect(isoTimestamp(usageDates.periodStart)).toBe(
      new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1)).toISOString(),
    );
    expect(isoTimestamp(usageDates.periodEnd)).toBe(
      new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1)).toISOString(),
    );
  });

  it('growth bills overage per unit and stops at the spending cap, with the 80% alert once', async () => {
    const tenantId = newId('tenant');
    await billing.setQuota({ tenantId, meter: 'image_sign', quota: 1n });
    const reserve = () => billing.reserve({ tenantId, meter: 'image_sign', plan: 'growth', spendingCapUsd: 2 });
    expect((await reserve()).overageUnits).toBe(0n); // within quota
    const first = await reserve(); // $0.50
    expect(first).toMatchObject({ overageUnits: 1n, overageUsd: 0.5 });
    await reserve(); // $1.00
    await reserve(); // $1.50 — 75%
    expect((await alertEvents(tenantId)).filter((e) => e.type === 'billing.spending_cap_warning')).toHaveLength(0);
    await reserve(); // $2.00 — 100% of the cap, allowed (not above)
    expect(await codeOf(reserve())).toBe('cairn.billing.spending_cap_reached');
    const events = await alertEvents(tenantId);
    expect(events.filter((e) => e.type === 'billing.spending_cap_warning')).toHaveLength(1);
    expect((await billing.getUsage({ tenantId, plan: 'growth' })).spendUsd).toBe(2);
    // Growth does not refuse at the quota: it bills; the quota_exceeded event still tells the tenant once.
    expect(events.filter((e) => e.type === 'billing.quota_exceeded')).toHaveLength(1);
  });

  it('sends the 80% quota warning and the 100% event once each per period', async () => {
    const tenantId = newId('tenant');
    await billing.setQuota({ tenantId, meter: 'image_verify', quota: 10n });
    for (let i = 0; i < 7; i++) await billing.reserve({ tenantId, meter: 'image_verify', plan: 'developer' });
    expect(await alertEvents(tenantId)).toHaveLength(0);
    await billing.reserve({ tenantId, meter: 'image_verify', plan: 'developer' }); // 8 of 10
    let events = await alertEvents(tenantId);
    expect(events.map((e) => e.type)).toEqual(['billing.quota_warning']);
    expect(events[0]!.data).toMatchObject({ meter: 'image_verify', used: 8, limit: 10 });
    await billing.reserve({ tenantId, meter: 'image_verify', plan: 'developer' });
    await billing.reserve({ tenantId, meter: 'image_verify', plan: 'developer' }); // 10 of 10
    await codeOf(billing.reserve({ tenantId, meter: 'image_verify', plan: 'developer' }));
    await codeOf(billing.reserve({ tenantId, meter: 'image_verify', plan: 'developer' }));
    events = await alertEvents(tenantId);
    expect(events.map((e) => e.type)).toEqual(['billing.quota_warning', 'billing.quota_exceeded']);
  });

  it('the sweep releases reservations left open by a crash', async () => {
    const tenantId = newId('tenant');
    await billing.setQuota({ tenantId, meter: 'video_sign', quota: 1n });
    await billing.reserve({ tenantId, meter: 'video_sign', plan: 'developer' });
    expect(await codeOf(billing.reserve({ tenantId, meter: 'video_sign', plan: 'developer' }))).toBe(
      'cairn.billing.quota_exceeded',
    );
    // Age the reservation past its TTL as a crash would leave it.
    await admin.query(
      `update billing.reservations set created_at = now() - interval '1 hour', expires_at = now() - interval '1 minute' where tenant_id = $1`,
      [tenantId],
    );
    expect((await billing.sweepExpired({})).released).toBeGreaterThanOrEqual(1);
    expect(await usageOf(tenantId, 'developer', 'video_sign')).toMatchObject({ used: 0n, reserved: 0n });
    expect(await codeOf(billing.reserve({ tenantId, meter: 'video_sign', plan: 'developer' }))).toBe('ok');
  });

  it('refuses to commit another tenant’s reservation', async () => {
    const a = newId('tenant');
    const b = newId('tenant');
    const r = await billing.reserve({ tenantId: a, meter: 'lookup', plan: 'developer' });
    expect(await codeOf(billing.commit({ tenantId: b, reservationId: r.reservationId }))).toBe('cairn.not_found');
    expect(await usageOf(a, 'developer', 'lookup')).toMatchObject({ used: 0n, reserved: 1n });
  });

  it('keeps tenants apart in the database itself (row-level security), whatever the query asks', async () => {
    const a = newId('tenant');
    const b = newId('tenant');
    const r = await billing.reserve({ tenantId: a, meter: 'lookup', plan: 'developer' });
    // As the service role, selecting by reservation id alone, with no tenant in the WHERE clause: only the
    // policy stands between tenant b and tenant a's row (packages/db/test/rls.test.ts covers every table).
    const app = new pg.Client({ connectionString: sandbox.databaseUrl });
    await app.connect();
    const visibleTo = async (tenantId: string) => {
      await app.query('begin');
      try {
        await app.query("select set_config('cairn.tenant_id', $1, true)", [tenantId]);
        return (
          await app.query<{ tenant_id: string }>(
            'select tenant_id from billing.reservations where reservation_id = $1',
            [r.reservationId],
          )
        ).rows;
      } finally {
        await app.query('rollback');
      }
    };
    try {
      expect(await visibleTo(a)).toEqual([{ tenant_id: a }]);
      expect(await visibleTo(b)).toEqual([]);
    } finally {
      await app.end();
    }
  });
});
