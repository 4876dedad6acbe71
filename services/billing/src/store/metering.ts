import { randomUUID } from 'node:crypto';
import { and, eq, lt, sql } from 'drizzle-orm';
import { newEvent, type AnyEvent } from '@cairn/events';
import { setTenant, withTenant, type Database, type Tx } from '@cairn/db';
import { CairnError } from '@cairn/errors';
import type { Outbox } from '@cairn/runtime';
import { alerts, counters, quotas, reservations, spend } from '../db/schema.js';
import { billsOverage, METERS, PLANS, type Meter, type PlanName } from '@cairn/catalog';
import { periodOf } from '../domain/period.js';
import { microsToUsd, usdToMicros, type PriceTable } from '../domain/prices.js';

export interface ReserveInput {
  tenantId: string;
  meter: Meter;
  plan: PlanName;
  /** null = no cap. */
  spendingCapUsd: number | null;
  quantity: number;
  reservationId?: string;
}

export interface Reservation {
  reservationId: string;
  used: number;
  limit: number;
  overageUnits: number;
  overageUsd: number;
}

export interface MeterUsage {
  meter: Meter;
  used: number;
  limit: number;
  reserved: number;
  overageUnits: number;
}

type Refusal = { refused: CairnError };

/** An alert a reserve has reached: its marker name and its event (built only if the marker is new). */
type PendingAlert = { alert: string; event: () => AnyEvent };

/** Per reserve: whether an event was enqueued, and the markers known to exist once the transaction commits. */
type AlertState = { alerted: boolean; marked: string[] };

/** Thrown inside the reserve transaction to roll it back and answer with the refusal. */
class RolledBack extends Error {
  constructor(readonly refused: CairnError) {
    super(refused.message);
  }
}

const sentKey = (tenantId: string, periodKey: string, alert: string) => `${tenantId}\u0000${periodKey}\u0000${alert}`;

/** Bound on the in-process memory of sent alert markers (cleared when full: it only saves round trips). */
const SENT_CACHE_MAX = 100_000;

/** Share of a quota (and of the spending cap) at which the warning goes out. */
const WARNING_RATIO = 0.8;

/**
 * Metering: reserve before the work, commit after it succeeds, release when it fails. Every reserve locks the
 * (tenant, meter, month) counter row, so concurrent reserves are serialized and `used + reserved` never
 * passes the quota on plans that refuse overage; on growth and enterprise the units above quota are priced
 * and added to the month's spend, which the spending cap bounds (its row is locked the same way, after the
 * counter). Reserve, commit and release each do their work in one statement, so the counter row stays locked
 * for that statement and the COMMIT only (the hot row's throughput is bounded by round trips under its lock).
 */
export class MeteringStore {
  /** Alert markers known committed (tenant, month, alert): a reserve past a threshold skips re-inserting them. */
  private readonly sent = new Set<string>();

  constructor(
    private readonly db: Database,
    private readonly outbox: Outbox,
    private readonly prices: PriceTable,
    private readonly ttlSeconds: number,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async reserve(input: ReserveInput): Promise<Reservation> {
    const alerting: AlertState = { alerted: false, marked: [] };
    let result: Reservation | Refusal;
    try {
      result = await withTenant(this.db, input.tenantId, (tx) => this.reserveInTx(tx, input, alerting));
    } catch (error) {
      // A refusal that had to undo the counter update (the spending cap) rolls the transaction back.
      if (!(error instanceof RolledBack)) throw error;
      result = { refused: error.refused };
    }
    // Marker rows are known only once their transaction committed.
    for (const key of alerting.marked) this.rememberSent(key);
    // Publish an alert at once; otherwise leave the outbox to its timer (a flush per reserve costs throughput).
    if (alerting.alerted) void this.outbox.flush();
    if ('refused' in result) throw result.refused;
    return result;
  }

  /**
   * One statement does the whole reserve while the counter row is locked: it reads the quota (override or
   * plan), upserts the counter with `reserved + quantity` only if `used + reserved + quantity` stays within it
   * (or the plan bills overage) — `on conflict do update ... where` evaluates that against the latest committed
   * row under its lock, so concurrent reserves are serialized and never pass the quota — prices the units
   * above the quota, adds them to the month's spend only if the spending cap allows (same conditional upsert
   * on the spend row, locked after the counter), and inserts the reservation. The transaction is then
   * BEGIN, set_config, this statement and COMMIT; alerts add statements only the first time a threshold is
   * passed (this process remembers the markers it has seen).
   */
  private async reserveInTx(tx: Tx, input: ReserveInput, alerting: AlertState): Promise<Reservation | Refusal> {
    const now = this.now();
    const period = periodOf(now);
    const reservationId = input.reservationId || `rsv_${randomUUID()}`;
    if (input.reservationId) {
      const [existing] = await tx
        .select()
        .from(reservations)
        .where(and(eq(reservations.reservationId, reservationId), eq(reservations.tenantId, input.tenantId)));
      if (existing) {
        const counter = await this.lockCounter(tx, input.tenantId, existing.meter, existing.periodStart);
        return {
          reservationId,
          used: counter.used + counter.reserved,
          limit: await this.limitOf(tx, input.tenantId, input.plan, input.meter),
          overageUnits: existing.overageUnits,
          overageUsd: microsToUsd(existing.overageMicros),
        };
      }
    }
    const planQuota = PLANS[input.plan].quotas[input.meter];
    const planLimit = typeof planQuota === 'number' ? planQuota : 0;
    const bills = billsOverage(input.plan);
    const unitMicros = bills ? this.prices.unitMicros(input.plan, input.meter) : 0;
    const capMicros = input.spendingCapUsd === null ? null : usdToMicros(input.spendingCapUsd);
    const { tenantId, meter, quantity } = input;
    const expiresAt = new Date(now.getTime() + this.ttlSeconds * 1000);

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
    const limit = Number(row.lim);
    const periodData = { period_start: period.start.toISOString(), period_end: period.end.toISOString() };

    if (row.before === null || row.over === null) {
      // Refused at the quota (a plan without overage). The counter row, if any, is locked: this read is exact.
      const [counter] = await tx
        .select({ used: counters.used, reserved: counters.reserved })
        .from(counters)
        .where(and(eq(counters.tenantId, tenantId), eq(counters.meter, meter), eq(counters.periodStart, period.key)));
      const before = counter ? counter.used + counter.reserved : 0;
      const offered = planQuota !== null || limit > 0;
      await this.alertOnce(tx, alerting, tenantId, period.key, [
        {
          alert: `quota_exceeded:${meter}`,
          event: () => newEvent('billing.quota_exceeded', tenantId, { meter, used: before, limit, ...periodData }),
        },
      ]);
      const detail = offered
        ? `The monthly ${meter} quota of the ${input.plan} plan (${limit}) is used up until ${period.end.toISOString()}; upgrade the plan to continue.`
        : `The ${meter} meter is not offered on the ${input.plan} plan.`;
      return { refused: new CairnError('cairn.billing.quota_exceeded', detail, { meter, used: before, limit }) };
    }

    const before = Number(row.before);
    const over = Number(row.over);
    const overageMicros = over * unitMicros;
    if (!row.inserted) {
      // Above the spending cap: undo the counter update (rollback), then refuse. The spend row, if any, is locked.
      const [spent] = await tx
        .select({ micros: spend.micros })
        .from(spend)
        .where(and(eq(spend.tenantId, tenantId), eq(spend.periodStart, period.key)));
      const spentBefore = spent?.micros ?? 0;
      const capUsd = input.spendingCapUsd ?? 0;
      throw new RolledBack(
        new CairnError(
          'cairn.billing.spending_cap_reached',
          `This ${meter} operation would bring the month's overage spend to $${microsToUsd(spentBefore + overageMicros).toFixed(2)}, above the spending cap of $${capUsd.toFixed(2)}.`,
          { meter, spend_usd: microsToUsd(spentBefore), spending_cap_usd: capUsd },
        ),
      );
    }

    const after = before + quantity;
    const due: PendingAlert[] = [];
    if (limit > 0 && after >= Math.ceil(limit * WARNING_RATIO)) {
      due.push({
        alert: `quota_warning:${meter}`,
        event: () =>
          newEvent('billing.quota_warning', tenantId, {
            meter,
            used: after,
            limit,
            threshold: WARNING_RATIO,
            ...periodData,
          }),
      });
    }
    if (limit > 0 && after >= limit) {
      due.push({
        alert: `quota_exceeded:${meter}`,
        event: () =>
          newEvent('billing.quota_exceeded', tenantId, { meter, used: after, limit, overage: bills, ...periodData }),
      });
    }
    if (
      overageMicros > 0 &&
      capMicros !== null &&
      capMicros > 0 &&
      row.spent_after !== null &&
      Number(row.spent_after) >= capMicros * WARNING_RATIO
    ) {
      const spendUsd = microsToUsd(Number(row.spent_after));
      due.push({
        alert: 'spending_cap_warning',
        event: () =>
          newEvent('billing.spending_cap_warning', tenantId, {
            spend_usd: spendUsd,
            spending_cap_usd: input.spendingCapUsd,
            threshold: WARNING_RATIO,
            ...periodData,
          }),
      });
    }
    await this.alertOnce(tx, alerting, tenantId, period.key, due);
    return { reservationId, used: after, limit, overageUnits: over, overageUsd: microsToUsd(overageMicros) };
  }

  /** Commit: one statement marks the reservation committed and moves its units from reserved to used. */
  async commit(tenantId: string, reservationId: string): Promise<'committed'> {
    return withTenant(this.db, tenantId, async (tx) => {
      const { rows } = await tx.execute<{ n: number }>(sql`
        with r as (
          update billing.reservations set status = 'committed', settled_at = ${this.now()}::timestamptz
          where reservation_id = ${reservationId} and tenant_id = ${tenantId} and status = 'reserved'
          returning meter, period_start, quantity, overage_units
        ),
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
      with r as (
        update billing.reservations set status = 'released', settled_at = ${this.now()}::timestamptz
        where reservation_id = ${reservationId} and tenant_id = ${tenantId} and status = 'reserved'
        returning meter, period_start, quantity, overage_micros
      ),
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
   */
  async recordUsed(
    tx: Tx,
    input: { tenantId: string; meter: Meter; plan: PlanName | null; quantity: number; at: Date },
  ): Promise<{ used: number; overageUnits: number }> {
    const period = periodOf(input.at);
    const { tenantId, meter, quantity, plan } = input;
    const planQuota = plan ? PLANS[plan].quotas[meter] : null;
    const planLimit = typeof planQuota === 'number' ? planQuota : 0;
    // Overage is billed only where the plan offers the meter and bills overage at all.
    const bills = plan !== null && planQuota !== null && billsOverage(plan);
    const unitMicros = plan && bills ? this.prices.unitMicros(plan, meter) : 0;
    const { rows } = await tx.execute<{ lim: string; before: string }>(sql`
      with lim as (
        select coalesce((select q.quota from billing.quotas q where q.tenant_id = ${tenantId} and q.meter = ${meter}), ${planLimit}::bigint) as v
      )
      insert into billing.counters as c (tenant_id, meter, period_start, used)
      values (${tenantId}, ${meter}, ${period.key}::date, ${quantity}::bigint)
      on conflict (tenant_id, meter, period_start) do update set used = c.used + excluded.used
      returning (select v from lim) as lim, c.used + c.reserved - ${quantity}::bigint as before
    `);
    const row = rows[0];
    if (!row) throw new Error('record statement returned no row');
    const before = Number(row.before);
    const over = bills ? quantity - Math.max(0, Math.min(quantity, Number(row.lim) - before)) : 0;
    if (over > 0) {
      await tx
        .update(counters)
        .set({ overageUnits: sql`${counters.overageUnits} + ${over}` })
        .where(and(eq(counters.tenantId, tenantId), eq(counters.meter, meter), eq(counters.periodStart, period.key)));
      if (unitMicros > 0) {
        await tx
          .insert(spend)
          .values({ tenantId, periodStart: period.key, micros: over * unitMicros })
          .onConflictDoUpdate({
            target: [spend.tenantId, spend.periodStart],
            set: { micros: sql`${spend.micros} + ${over * unitMicros}` },
          });
      }
    }
    return { used: before + quantity, overageUnits: over };
  }

  async usage(
    tenantId: string,
    plan: PlanName,
  ): Promise<{ periodStart: Date; periodEnd: Date; meters: MeterUsage[]; spendUsd: number }> {
    const period = periodOf(this.now());
    return withTenant(this.db, tenantId, async (tx) => {
      const rows = await tx
        .select()
        .from(counters)
        .where(and(eq(counters.tenantId, tenantId), eq(counters.periodStart, period.key)));
      const overrides = new Map(
        (await tx.select().from(quotas).where(eq(quotas.tenantId, tenantId))).map((q) => [q.meter, q.quota]),
      );
      const [spent] = await tx
        .select()
        .from(spend)
        .where(and(eq(spend.tenantId, tenantId), eq(spend.periodStart, period.key)));
      const byMeter = new Map(rows.map((r) => [r.meter, r]));
      const meters: MeterUsage[] = [];
      for (const meter of METERS) {
        const row = byMeter.get(meter);
        const planQuota = PLANS[plan].quotas[meter];
        const override = overrides.get(meter);
        // Listed: the meters the plan offers, the tenant's contract meters, and anything used this month.
        if (planQuota === null && override === undefined && !row) continue;
        if (planQuota === 'contract' && override === undefined && !row) continue;
        const limit = override ?? (typeof planQuota === 'number' ? planQuota : 0);
        meters.push({
          meter,
          used: row?.used ?? 0,
          limit,
          reserved: row?.reserved ?? 0,
          overageUnits: row?.overageUnits ?? 0,
        });
      }
      return { periodStart: period.start, periodEnd: period.end, meters, spendUsd: microsToUsd(spent?.micros ?? 0) };
    });
  }

  async setQuota(tenantId: string, meter: Meter, quota: number): Promise<void> {
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

  /** The included quota: the tenant's override, else the plan's (not offered = 0, contract without one = 0). */
  private async limitOf(tx: Tx, tenantId: string, plan: PlanName, meter: Meter): Promise<number> {
    const [override] = await tx
      .select({ quota: quotas.quota })
      .from(quotas)
      .where(and(eq(quotas.tenantId, tenantId), eq(quotas.meter, meter)));
    if (override) return override.quota;
    const planQuota = PLANS[plan].quotas[meter];
    return typeof planQuota === 'number' ? planQuota : 0;
  }

  private async lockCounter(
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

  /**
   * Enqueues each alert's event only the first time this month: the marker row is the "sent" record (inserted
   * with `on conflict do nothing`, in the reserve's transaction, so marker and event commit together). Markers
   * this process has already seen committed are skipped without a round trip.
   */
  private async alertOnce(
    tx: Tx,
    state: AlertState,
    tenantId: string,
    periodKey: string,
    due: PendingAlert[],
  ): Promise<void> {
    const fresh = due.filter((a) => !this.sent.has(sentKey(tenantId, periodKey, a.alert)));
    if (fresh.length === 0) return;
    const inserted = await tx
      .insert(alerts)
      .values(fresh.map((a) => ({ tenantId, periodStart: periodKey, alert: a.alert })))
      .onConflictDoNothing()
      .returning({ alert: alerts.alert });
    const won = new Set(inserted.map((r) => r.alert));
    for (const a of fresh) {
      state.marked.push(sentKey(tenantId, periodKey, a.alert));
      if (!won.has(a.alert)) continue;
      await this.outbox.enqueue(tx, a.event());
      state.alerted = true;
    }
  }

  private rememberSent(key: string): void {
    if (this.sent.size >= SENT_CACHE_MAX) this.sent.clear();
    this.sent.add(key);
  }
}
