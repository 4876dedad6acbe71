// The port the billing use cases run over, declared here (where the use cases can see it) and implemented in
// store/metering.ts (Postgres); service.ts builds it and injects it.
import type { Tx } from '@cairn/db';
import type { counters, reservations } from '../db/schema.js';

export type ReservationRow = typeof reservations.$inferSelect;
export type CounterRow = typeof counters.$inferSelect;

/** The values the reserve statement works with (app/metering.ts decides them). */
export interface ReserveStatement {
  tenantId: string;
  meter: string;
  quantity: number;
  periodKey: string;
  /** The plan's quota (used when the tenant has no override). */
  planLimit: number;
  /** Whether units above the quota are billed (else they are refused). */
  bills: boolean;
  unitMicros: number;
  /** null = no spending cap. */
  capMicros: number | null;
  reservationId: string;
  now: Date;
  expiresAt: Date;
}

/** The reserve statement's answer (bigints as strings, as Postgres returns them). */
export interface ReserveOutcome {
  lim: string;
  before: string | null;
  over: string | null;
  spent_after: string | null;
  inserted: boolean;
}

/** Counters, reservations, spend, quotas and alerts (store/metering.ts: every statement of metering). */
export interface MeteringLedger {
  /** A transaction scoped (RLS) to one tenant. */
  inTenant<T>(tenantId: string, fn: (tx: Tx) => Promise<T>): Promise<T>;
  findReservation(tx: Tx, tenantId: string, reservationId: string): Promise<ReservationRow | undefined>;
  /** The whole reserve in one statement, while the counter row is locked; `before`/`over` null: the quota refused. */
  reserveStatement(tx: Tx, p: ReserveStatement): Promise<ReserveOutcome>;
  counterOf(
    tx: Tx,
    tenantId: string,
    meter: string,
    periodKey: string,
  ): Promise<{ used: number; reserved: number } | undefined>;
  spendOf(tx: Tx, tenantId: string, periodKey: string): Promise<number>;
  commit(tenantId: string, reservationId: string): Promise<'committed'>;
  release(tenantId: string, reservationId: string): Promise<'released' | 'committed'>;
  /** Releases open reservations older than `olderThanSeconds` (default: their TTL). */
  sweepExpired(olderThanSeconds?: number, batch?: number): Promise<number>;
  /** Adds used units that cannot be refused; answers the tenant's quota and the counter before them. */
  addUsed(
    tx: Tx,
    p: { tenantId: string; meter: string; periodKey: string; quantity: number; planLimit: number },
  ): Promise<{ limit: number; before: number }>;
  addOverage(
    tx: Tx,
    p: { tenantId: string; meter: string; periodKey: string; over: number; micros: number },
  ): Promise<void>;
  monthOf(
    tenantId: string,
    periodKey: string,
  ): Promise<{ counters: CounterRow[]; overrides: Map<string, number>; spendMicros: number }>;
  setQuota(tenantId: string, meter: string, quota: number): Promise<void>;
  quotaOverride(tx: Tx, tenantId: string, meter: string): Promise<number | undefined>;
  lockCounter(tx: Tx, tenantId: string, meter: string, periodKey: string): Promise<{ used: number; reserved: number }>;
  /** Inserts the alert markers not there yet; answers the ones this call inserted (the ones to send). */
  insertAlertMarkers(tx: Tx, tenantId: string, periodKey: string, alertNames: string[]): Promise<Set<string>>;
}
