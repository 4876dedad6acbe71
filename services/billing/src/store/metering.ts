import { and, eq, lt, sql, type SQL } from 'drizzle-orm';
import { setTenant, withTenant, type Database, type Tx } from '@cairn/db';
import { CairnError } from '@cairn/errors';
import type { CounterRow, MeteringLedger, ReservationRow, ReserveOutcome, ReserveStatement } from '../app/ports.js';
import { alerts, counters, quotas, reservations, spend } from '../db/schema.js';

/**
 * billing.counters, reservations, spend, quotas and alerts: every statement of metering. Reserve, commit and
 * release each do their work in one statement, so the counter row stays locked for that statement and the
 * COMMIT only.
 */
export class MeteringStore implements MeteringLedger {
  constructor(
    private readonly db: Database,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** A transaction scoped (RLS) to one tenant. */
  inTenant<T>(tenantId: string, fn: (tx: Tx) => Promise<T>): Promise<T> {
    return withTenant(this.db, tenantId, fn);
  }

  async findReservation(tx: Tx, tenantId: string, reservationId: string): Promise<ReservationRow | undefined> {
    const [existing] = await tx
      .select()
      .from(reservations)
      .where(and(eq(reservations.reservationId, reservationId), eq(reservations.tenantId, tenantId)));
    return existing;
  }

  /**
   * One statement does the whole reserve while the counter row is locked: it reads the quota (override or
   * plan), upserts the counter with `reserved + quantity` only if `used + reserved + quantity` stays within it
   * (or the plan bills overage) — `on conflict do update ... where` evaluates that against the latest committed
   * row under its lock, so concurrent reserves are serialized and never pass the quota — prices the units
   * above the quota, adds them to the month's spend only if the spending cap allows (same conditional upsert
   * on the spend row, locked after the counter), and inserts the reservation. `before`/`over` are null when
   * the quota refused it; `inserted` is false when the spending cap did.
   */
  async reserveStatement(tx: Tx, p: ReserveStatement): Promise<ReserveOutcome> {
    const { tenantId, meter, quantity, planLimit, bills, unitMicros, capMicros, reservationId, now, expiresAt } = p;
    const period = { key: p.periodKey };
    const { rows } = await tx.execute<{
      lim: string;
      before: string | null;
      over: string | null;
      spent_after: string | null;
      inserted: boolean;
    }>(sql`
      with lim as (
        select coalesce((select q.quota from billing.quotas q where q.tenant_id = ${tenantId} and q.meter = ${meter}), ${planLimit}::bigint) as v
      ),
      ctr as (
        insert into billing.counters as c (tenant_id, meter, period_start, reserved)
        select ${tenantId}, ${meter}, ${period.key}::date, ${quantity}::bigint from lim
        where ${bills}::boolean or ${quantity}::bigint <= lim.v
        on conflict (tenant_id, meter, period_start) do update set reserved = c.reserved + excluded.reserved
          where ${bills}::boolean or c.used + c.reserved + excluded.reserved <= (select v from lim)
        returning c.used + c.reserved - ${quantity}::bigint as before
      ),
      calc as (
        select ctr.before, ${quantity}::bigint - greatest(0, least(${quantity}::bigint, lim.v - ctr.before)) as over from ctr, lim
      ),
      spent as (
        insert into billing.spend as s (tenant_id, period_start, micros)
        select ${tenantId}, ${period.key}::date, calc.over * ${unitMicros}::bigint from calc
        where calc.over > 0 and (${capMicros}::bigint is null or calc.over * ${unitMicros}::bigint <= ${capMicros}::bigint)
        on conflict (tenant_id, period_start) do update set micros = s.micros + excluded.micros
          where ${capMicros}::bigint is null or s.micros + excluded.micros <= ${capMicros}::bigint
        returning s.micros
      ),
      rsv as (
        insert into billing.reservations (reservation_id, tenant_id, meter, period_start, quantity, overage_units, overage_micros, status, created_at, expires_at)
        select ${reservationId}, ${tenantId}, ${meter}, ${period.key}::date, ${quantity}::integer, calc.over, calc.over * ${unitMicros}::bigint, 'reserved', ${now}::timestamptz, ${expiresAt}::timestamptz
        from calc where calc.over = 0 or exists (select 1 from spent)
        returning 1
      )
      select lim.v as lim, calc.before, calc.over, (select micros from spent) as spent_after, exists (select 1 from rsv) as inserted
      from lim left join calc on true
    `);
    const row = rows[0];
    if (!row) throw new Error('reserve statement returned no row');
    return row;
  }

  async counterOf(
    tx: Tx,
    tenantId: string,
    meter: string,
    periodKey: string,
  ): Promise<{ used: number; reserved: number } | undefined> {
    const [counter] = await tx
      .select({ used: counters.used, reserved: counters.reserved })
      .from(counters)
      .where(and(eq(counters.tenantId, tenantId), eq(counters.meter, meter), eq(counters.periodStart, periodKey)));
    return counter;
  }

  async spendOf(tx: Tx, tenantId: string, periodKey: string): Promise<number> {
    const [spent] = await tx
      .select({ micros: spend.micros })
      .from(spend)
      .where(and(eq(spend.tenantId, tenantId), eq(spend.periodStart, periodKey)));
    return spent?.micros ?? 0;
  }

  /** Settles the reservation as `status` if it is still open, returning what commit and release move back. */
  private settleOpen(tenantId: string, reservationId: string, status: 'committed' | 'released'): SQL {
    return sql`
      update billing.reservations set status = ${status}, settled_at = ${this.now()}::timestamptz
      where reservation_id = ${reservationId} and tenant_id = ${tenantId} and status = 'reserved'
      returning meter, period_start, quantity, overage_units, overage_micros
    `;
  }

  /** Commit: one statement marks the reservation committed and moves its units from reserved to used. */
  async commit(tenantId: string, reservationId: string): Promise<'committed'> {
    return withTenant(this.db, tenantId, async (tx) => {
      const { rows } = await tx.execute<{ n: number }>(sql`
        with r as (${this.settleOpen(tenantId, reservationId, 'committed')}),
        cu as (
          update billing.counters k
          set reserved = k.reserved - r.quantity, used = k.used + r.quantity, overage_units = k.overage_units + r.overage_units
          from r where k.tenant_id = ${tenantId} and k.meter = r.meter and k.period_start = r.period_start
          returning 1
        )
        select (select count(*) from r)::int as n
      `);
      if (Number(rows[0]?.n ?? 0) > 0) return 'committed' as const;
      // Not open: unknown (not_found), already committed (idempotent), or released by the sweep.
      const row = await this.lockReservation(tx, tenantId, reservationId);
      if (row.status === 'committed') return 'committed' as const;
      if (row.status !== 'released') throw new Error(`reservation ${reservationId} is ${row.status}`);
      // Released by the expiry sweep, yet the work was done: it is billed (the quota may be passed by it).
      const counter = and(
        eq(counters.tenantId, tenantId),
        eq(counters.meter, row.meter),
        eq(counters.periodStart, row.periodStart),
      );
      await this.lockCounter(tx, tenantId, row.meter, row.periodStart);
      await tx
        .update(counters)
        .set({
          used: sql`${counters.used} + ${row.quantity}`,
          overageUnits: sql`${counters.overageUnits} + ${row.overageUnits}`,
        })
        .where(counter);
      if (row.overageMicros > 0) {
        await this.lockSpend(tx, tenantId, row.periodStart);
        await tx
          .update(spend)
          .set({ micros: sql`${spend.micros} + ${row.overageMicros}` })
          .where(and(eq(spend.tenantId, tenantId), eq(spend.periodStart, row.periodStart)));
      }
      await tx
        .update(reservations)
        .set({ status: 'committed', settledAt: this.now() })
        .where(eq(reservations.reservationId, reservationId));
      return 'committed' as const;
    });
  }

  async release(tenantId: string, reservationId: string): Promise<'released' | 'committed'> {
    return withTenant(this.db, tenantId, (tx) => this.releaseInTx(tx, tenantId, reservationId));
  }

  /** Release: one statement marks the reservation released and returns its units (and overage spend). */
  private async releaseInTx(tx: Tx, tenantId: string, reservationId: string): Promise<'released' | 'committed'> {
    const { rows } = await tx.execute<{ n: number }>(sql`
      with r as (${this.settleOpen(tenantId, reservationId, 'released')}),
      cu as (
        update billing.counters k set reserved = k.reserved - r.quantity
        from r where k.tenant_id = ${tenantId} and k.meter = r.meter and k.period_start = r.period_start
        returning 1
      ),
      su as (
        -- Reads cu first, so the counter row is locked before the spend row (the order reserve takes them in).
        update billing.spend s set micros = s.micros - r.overage_micros
        from r where s.tenant_id = ${tenantId} and s.period_start = r.period_start and r.overage_micros > 0 and exists (select 1 from cu)
        returning 1
      )
      select (select count(*) from r)::int as n, (select count(*) from su)::int as s
    `);
    if (Number(rows[0]?.n ?? 0) > 0) return 'released';
    const row = await this.lockReservation(tx, tenantId, reservationId);
    return row.status === 'committed' ? 'committed' : 'released';
  }

  /** Releases open reservations older than `olderThanSeconds` (default: their TTL): a crash never leaks quota. */
  async sweepExpired(olderThanSeconds?: number, batch = 500): Promise<number> {
    return this.db.transaction(async (tx) => {
      await tx.execute(sql`select set_config('cairn.system', 'billing-sweep', true)`);
      const cutoff =
        olderThanSeconds !== undefined
          ? lt(reservations.createdAt, new Date(this.now().getTime() - olderThanSeconds * 1000))
          : lt(reservations.expiresAt, this.now());
      const due = await tx
        .select({ reservationId: reservations.reservationId, tenantId: reservations.tenantId })
        .from(reservations)
        .where(and(eq(reservations.status, 'reserved'), cutoff))
        .orderBy(reservations.tenantId)
        .limit(batch)
        .for('update', { skipLocked: true });
      let released = 0;
      for (const row of due) {
        await setTenant(tx, row.tenantId);
        if ((await this.releaseInTx(tx, row.tenantId, row.reservationId)) === 'released') released++;
      }
      return released;
    });
  }

  /**
   * Records units of work that already happened and cannot be refused (an anchor batch confirmed on chain), in
   * the caller's transaction — the event consumer's, which also claims the event id, so a redelivered event
   * records nothing. The month is the one the work happened in (`at`). Never refused: quota and spending cap
   * bound the work a tenant asks for, not facts after it. On a plan that offers the meter the units count against
   * its quota and, where the plan bills overage, the units above it are priced into the month's spend; on a plan
   * that does not offer it (`plan` null: the tenant is unknown) they are recorded, visible in usage, not charged.

  /**
   * Adds used units that cannot be refused (no reservation) to the month's counter; answers the tenant's quota
   * (override, else `planLimit`) and the counter's used + reserved before them.
   */
  async addUsed(
    tx: Tx,
    p: { tenantId: string; meter: string; periodKey: string; quantity: number; planLimit: number },
  ): Promise<{ limit: number; before: number }> {
    const { tenantId, meter, quantity, planLimit } = p;
    const { rows } = await tx.execute<{ lim: string; before: string }>(sql`
      with lim as (
        select coalesce((select q.quota from billing.quotas q where q.tenant_id = ${tenantId} and q.meter = ${meter}), ${planLimit}::bigint) as v
      )
      insert into billing.counters as c (tenant_id, meter, period_start, used)
      values (${tenantId}, ${meter}, ${p.periodKey}::date, ${quantity}::bigint)
      on conflict (tenant_id, meter, period_start) do update set used = c.used + excluded.used
      returning (select v from lim) as lim, c.used + c.reserved - ${quantity}::bigint as before
    `);
    const row = rows[0];
    if (!row) throw new Error('record statement returned no row');
    return { limit: Number(row.lim), before: Number(row.before) };
  }

  /** Counts `over` units as overage on the month's counter and adds `micros` (when any) to its spend. */
  async addOverage(
    tx: Tx,
    p: { tenantId: string; meter: string; periodKey: string; over: number; micros: number },
  ): Promise<void> {
    const { tenantId, meter, periodKey, over, micros } = p;
    await tx
      .update(counters)
      .set({ overageUnits: sql`${counters.overageUnits} + ${over}` })
      .where(and(eq(counters.tenantId, tenantId), eq(counters.meter, meter), eq(counters.periodStart, periodKey)));
    if (micros > 0) {
      await tx
        .insert(spend)
        .values({ tenantId, periodStart: periodKey, micros })
        .onConflictDoUpdate({
          target: [spend.tenantId, spend.periodStart],
          set: { micros: sql`${spend.micros} + ${micros}` },
        });
    }
  }

  /** A tenant's month: its counters, its quota overrides, its overage spend. */
  async monthOf(
    tenantId: string,
    periodKey: string,
  ): Promise<{ counters: CounterRow[]; overrides: Map<string, number>; spendMicros: number }> {
    return withTenant(this.db, tenantId, async (tx) => {
      const rows = await tx
        .select()
        .from(counters)
        .where(and(eq(counters.tenantId, tenantId), eq(counters.periodStart, periodKey)));
      const overrides = new Map(
        (await tx.select().from(quotas).where(eq(quotas.tenantId, tenantId))).map((q) => [q.meter, q.quota]),
      );
      const [spent] = await tx
        .select()
        .from(spend)
        .where(and(eq(spend.tenantId, tenantId), eq(spend.periodStart, periodKey)));
      return { counters: rows, overrides, spendMicros: spent?.micros ?? 0 };
    });
  }

  async setQuota(tenantId: string, meter: string, quota: number): Promise<void> {
    await withTenant(this.db, tenantId, async (tx) => {
      if (quota < 0) {
        await tx.delete(quotas).where(and(eq(quotas.tenantId, tenantId), eq(quotas.meter, meter)));
        return;
      }
      await tx
        .insert(quotas)
        .values({ tenantId, meter, quota })
        .onConflictDoUpdate({ target: [quotas.tenantId, quotas.meter], set: { quota, updatedAt: new Date() } });
    });
  }

  /** The tenant's quota override for a meter, if any. */
  async quotaOverride(tx: Tx, tenantId: string, meter: string): Promise<number | undefined> {
    const [override] = await tx
      .select({ quota: quotas.quota })
      .from(quotas)
      .where(and(eq(quotas.tenantId, tenantId), eq(quotas.meter, meter)));
    return override?.quota;
  }

  async lockCounter(
    tx: Tx,
    tenantId: string,
    meter: string,
    periodKey: string,
  ): Promise<{ used: number; reserved: number }> {
    await tx.insert(counters).values({ tenantId, meter, periodStart: periodKey }).onConflictDoNothing();
    const [row] = await tx
      .select({ used: counters.used, reserved: counters.reserved })
      .from(counters)
      .where(and(eq(counters.tenantId, tenantId), eq(counters.meter, meter), eq(counters.periodStart, periodKey)))
      .for('update');
    if (!row) throw new Error('counter row missing after upsert');
    return row;
  }

  private async lockSpend(tx: Tx, tenantId: string, periodKey: string): Promise<number> {
    await tx.insert(spend).values({ tenantId, periodStart: periodKey }).onConflictDoNothing();
    const [row] = await tx
      .select({ micros: spend.micros })
      .from(spend)
      .where(and(eq(spend.tenantId, tenantId), eq(spend.periodStart, periodKey)))
      .for('update');
    return row?.micros ?? 0;
  }

  private async lockReservation(tx: Tx, tenantId: string, reservationId: string) {
    const [row] = await tx
      .select()
      .from(reservations)
      .where(and(eq(reservations.reservationId, reservationId), eq(reservations.tenantId, tenantId)))
      .for('update');
    if (!row) throw new CairnError('cairn.not_found', `Reservation ${reservationId} not found.`);
    return row;
  }

  /** Inserts the alert markers not there yet; answers the alerts this call inserted (the ones to send). */
  async insertAlertMarkers(tx: Tx, tenantId: string, periodKey: string, alertNames: string[]): Promise<Set<string>> {
    const inserted = await tx
      .insert(alerts)
      .values(alertNames.map((alert) => ({ tenantId, periodStart: periodKey, alert })))
      .onConflictDoNothing()
      .returning({ alert: alerts.alert });
    return new Set(inserted.map((r) => r.alert));
  }
}
