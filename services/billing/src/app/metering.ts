import { randomUUID } from 'node:crypto';
import { newEvent, type AnyEvent } from '@cairn/events';
import type { Tx } from '@cairn/db';
import { CairnError } from '@cairn/errors';
import type { Outbox } from '@cairn/runtime';
import { billsOverage, METERS, PLANS, type Meter, type PlanName, type Quota } from '@cairn/catalog';
import { periodOf } from '../domain/period.js';
import { microsToUsd, usdToMicros, type PriceTable } from '../domain/prices.js';
import type { MeteringLedger } from './ports.js';

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

type Period = ReturnType<typeof periodOf>;

/** What a plan says for a reserve: its included quota, and how units above it are priced and capped. */
interface ReserveTerms {
  planQuota: Quota;
  planLimit: number;
  bills: boolean;
  unitMicros: number;
  capMicros: number | null;
}

const periodData = (period: Period) => ({
  period_start: period.start.toISOString(),
  period_end: period.end.toISOString(),
});

/**
 * The alerts an accepted reserve has reached: near and past the quota, and near the spending cap (each is sent
 * once a month: alertOnce).
 */
function alertsDue(
  input: ReserveInput,
  period: Period,
  terms: ReserveTerms,
  reached: { after: number; limit: number; overageMicros: number; spentAfter: number | null },
): PendingAlert[] {
  const { tenantId, meter } = input;
  const { after, limit, overageMicros, spentAfter } = reached;
  const { capMicros } = terms;
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
          ...periodData(period),
        }),
    });
  }
  if (limit > 0 && after >= limit) {
    due.push({
      alert: `quota_exceeded:${meter}`,
      event: () =>
        newEvent('billing.quota_exceeded', tenantId, {
          meter,
          used: after,
          limit,
          overage: terms.bills,
          ...periodData(period),
        }),
    });
  }
  if (
    overageMicros > 0 &&
    capMicros !== null &&
    capMicros > 0 &&
    spentAfter !== null &&
    spentAfter >= capMicros * WARNING_RATIO
  ) {
    const spendUsd = microsToUsd(spentAfter);
    due.push({
      alert: 'spending_cap_warning',
      event: () =>
        newEvent('billing.spending_cap_warning', tenantId, {
          spend_usd: spendUsd,
          spending_cap_usd: input.spendingCapUsd,
          threshold: WARNING_RATIO,
          ...periodData(period),
        }),
    });
  }
  return due;
}

/**
 * Metering: reserve before the work, commit after it succeeds, release when it fails. Every reserve locks the
 * (tenant, meter, month) counter row, so concurrent reserves are serialized and `used + reserved` never
 * passes the quota on plans that refuse overage; on growth and enterprise the units above quota are priced
 * and added to the month's spend, which the spending cap bounds (its row is locked the same way, after the
 * counter). Reserve, commit and release each do their work in one statement (store/metering.ts), so the counter
 * row stays locked for that statement and the COMMIT only (the hot row's throughput is bounded by round trips
 * under its lock).
 */
export class Metering {
  /** Alert markers known committed (tenant, month, alert): a reserve past a threshold skips re-inserting them. */
  private readonly sent = new Set<string>();

  constructor(
    private readonly store: MeteringLedger,
    private readonly outbox: Outbox,
    private readonly prices: PriceTable,
    private readonly ttlSeconds: number,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async reserve(input: ReserveInput): Promise<Reservation> {
    const alerting: AlertState = { alerted: false, marked: [] };
    let result: Reservation | Refusal;
    try {
      result = await this.store.inTenant(input.tenantId, (tx) => this.reserveInTx(tx, input, alerting));
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
   * The reserve's transaction: BEGIN, set_config, the one reserve statement and COMMIT; alerts add statements
   * only the first time a threshold is passed (this process remembers the markers it has seen).
   */
  private async reserveInTx(tx: Tx, input: ReserveInput, alerting: AlertState): Promise<Reservation | Refusal> {
    const now = this.now();
    const period = periodOf(now);
    const reservationId = input.reservationId || `rsv_${randomUUID()}`;
    if (input.reservationId) {
      const held = await this.heldReservation(tx, input, reservationId);
      if (held) return held;
    }
    const terms = this.termsOf(input);
    const { tenantId, meter, quantity } = input;
    const row = await this.store.reserveStatement(tx, {
      tenantId,
      meter,
      quantity,
      periodKey: period.key,
      planLimit: terms.planLimit,
      bills: terms.bills,
      unitMicros: terms.unitMicros,
      capMicros: terms.capMicros,
      reservationId,
      now,
      expiresAt: new Date(now.getTime() + this.ttlSeconds * 1000),
    });
    const limit = Number(row.lim);
    if (row.before === null || row.over === null)
      return this.refusedAtQuota(tx, input, alerting, period, terms.planQuota !== null || limit > 0, limit);
    const over = Number(row.over);
    const overageMicros = over * terms.unitMicros;
    if (!row.inserted) throw new RolledBack(await this.spendingCapReached(tx, input, period.key, overageMicros));
    const after = Number(row.before) + quantity;
    const spentAfter = row.spent_after === null ? null : Number(row.spent_after);
    const due = alertsDue(input, period, terms, { after, limit, overageMicros, spentAfter });
    await this.alertOnce(tx, alerting, tenantId, period.key, due);
    return { reservationId, used: after, limit, overageUnits: over, overageUsd: microsToUsd(overageMicros) };
  }

  /** A retry of a reservation already made: answered again as it was made, with the counter as it is now. */
  private async heldReservation(tx: Tx, input: ReserveInput, reservationId: string): Promise<Reservation | undefined> {
    const existing = await this.store.findReservation(tx, input.tenantId, reservationId);
    if (!existing) return undefined;
    const counter = await this.store.lockCounter(tx, input.tenantId, existing.meter, existing.periodStart);
    return {
      reservationId,
      used: counter.used + counter.reserved,
      limit: await this.limitOf(tx, input.tenantId, input.plan, input.meter),
      overageUnits: existing.overageUnits,
      overageUsd: microsToUsd(existing.overageMicros),
    };
  }

  /** The plan's terms for this reserve: its included quota, and how units above it are priced and capped. */
  private termsOf(input: ReserveInput): ReserveTerms {
    const planQuota = PLANS[input.plan].quotas[input.meter];
    const bills = billsOverage(input.plan);
    return {
      planQuota,
      planLimit: typeof planQuota === 'number' ? planQuota : 0,
      bills,
      unitMicros: bills ? this.prices.unitMicros(input.plan, input.meter) : 0,
      capMicros: input.spendingCapUsd === null ? null : usdToMicros(input.spendingCapUsd),
    };
  }

  /**
   * Refused at the quota (a plan without overage), with its alert the first time this month. The counter row, if
   * any, is locked: the usage read here is exact.
   */
  private async refusedAtQuota(
    tx: Tx,
    input: ReserveInput,
    alerting: AlertState,
    period: Period,
    offered: boolean,
    limit: number,
  ): Promise<Refusal> {
    const { tenantId, meter } = input;
    const counter = await this.store.counterOf(tx, tenantId, meter, period.key);
    const before = counter ? counter.used + counter.reserved : 0;
    await this.alertOnce(tx, alerting, tenantId, period.key, [
      {
        alert: `quota_exceeded:${meter}`,
        event: () =>
          newEvent('billing.quota_exceeded', tenantId, { meter, used: before, limit, ...periodData(period) }),
      },
    ]);
    const detail = offered
      ? `The monthly ${meter} quota of the ${input.plan} plan (${limit}) is used up until ${period.end.toISOString()}; upgrade the plan to continue.`
      : `The ${meter} meter is not offered on the ${input.plan} plan.`;
    return { refused: new CairnError('cairn.billing.quota_exceeded', detail, { meter, used: before, limit }) };
  }

  /**
   * Above the spending cap: the refusal, thrown by the caller to undo the counter update (rollback). The spend
   * row, if any, is locked.
   */
  private async spendingCapReached(
    tx: Tx,
    input: ReserveInput,
    periodKey: string,
    overageMicros: number,
  ): Promise<CairnError> {
    const spentBefore = await this.store.spendOf(tx, input.tenantId, periodKey);
    const capUsd = input.spendingCapUsd ?? 0;
    return new CairnError(
      'cairn.billing.spending_cap_reached',
      `This ${input.meter} operation would bring the month's overage spend to $${microsToUsd(spentBefore + overageMicros).toFixed(2)}, above the spending cap of $${capUsd.toFixed(2)}.`,
      { meter: input.meter, spend_usd: microsToUsd(spentBefore), spending_cap_usd: capUsd },
    );
  }

  /** Commit: the reservation's units move from reserved to used (idempotent; a swept one is billed all the same). */
  async commit(tenantId: string, reservationId: string): Promise<'committed'> {
    return this.store.commit(tenantId, reservationId);
  }

  async release(tenantId: string, reservationId: string): Promise<'released' | 'committed'> {
    return this.store.release(tenantId, reservationId);
  }

  /** Releases open reservations older than `olderThanSeconds` (default: their TTL): a crash never leaks quota. */
  async sweepExpired(olderThanSeconds?: number, batch = 500): Promise<number> {
    return this.store.sweepExpired(olderThanSeconds, batch);
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
    const { limit, before } = await this.store.addUsed(tx, {
      tenantId,
      meter,
      periodKey: period.key,
      quantity,
      planLimit,
    });
    const over = bills ? quantity - Math.max(0, Math.min(quantity, limit - before)) : 0;
    if (over > 0)
      await this.store.addOverage(tx, { tenantId, meter, periodKey: period.key, over, micros: over * unitMicros });
    return { used: before + quantity, overageUnits: over };
  }

  async usage(
    tenantId: string,
    plan: PlanName,
  ): Promise<{ periodStart: Date; periodEnd: Date; meters: MeterUsage[]; spendUsd: number }> {
    const period = periodOf(this.now());
    const { counters: rows, overrides, spendMicros } = await this.store.monthOf(tenantId, period.key);
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
    return { periodStart: period.start, periodEnd: period.end, meters, spendUsd: microsToUsd(spendMicros) };
  }

  async setQuota(tenantId: string, meter: Meter, quota: number): Promise<void> {
    await this.store.setQuota(tenantId, meter, quota);
  }

  /** The included quota: the tenant's override, else the plan's (not offered = 0, contract without one = 0). */
  private async limitOf(tx: Tx, tenantId: string, plan: PlanName, meter: Meter): Promise<number> {
    const override = await this.store.quotaOverride(tx, tenantId, meter);
    if (override !== undefined) return override;
    const planQuota = PLANS[plan].quotas[meter];
    return typeof planQuota === 'number' ? planQuota : 0;
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
    const won = await this.store.insertAlertMarkers(
      tx,
      tenantId,
      periodKey,
      fresh.map((a) => a.alert),
    );
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
