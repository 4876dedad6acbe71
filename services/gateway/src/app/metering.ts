import { inSpan } from '@cairn/telemetry';
import type { Tenant } from './ports.js';
import type { Metering } from './ports.js';

export type { BillingClient } from './ports.js';

/** An open reservation of one metered unit: commit it when the work succeeded, release it otherwise. */
export interface MeteredUnit {
  readonly reservationId: string;
  commit(): Promise<void>;
  release(): Promise<void>;
  /**
   * Leaves settling to whoever the reservation was handed to: billing, from the event the work records
   * (asset.signed, job.completed / job.failed).
   */
  handOver(): void;
}

/**
 * Reserves one unit of `meter` for the tenant (402 cairn.billing.quota_exceeded / spending_cap_reached when
 * refused; billing's CairnError crosses the gRPC hop unchanged). The tenant's plan and spending cap travel
 * with the call: billing never calls back to the gateway on the request path.
 */
export async function reserveUnit(billing: Metering, tenant: Tenant, meter: string): Promise<MeteredUnit> {
  const { reservationId } = await billing.reserve({
    tenantId: tenant.tenantId,
    meter,
    plan: tenant.plan,
    quantity: 1,
    ...(tenant.spendingCapUsd !== null ? { spendingCapUsd: tenant.spendingCapUsd } : {}),
  });
  let settled = false;
  const settle = async (how: 'commit' | 'release') => {
    if (settled) return;
    settled = true;
    if (how === 'commit') await billing.commit({ tenantId: tenant.tenantId, reservationId });
    // A failed release is not the client's problem: billing's expiry sweep frees the unit.
    else await billing.release({ tenantId: tenant.tenantId, reservationId }).catch(() => undefined);
  };
  return {
    reservationId,
    commit: () => settle('commit'),
    release: () => settle('release'),
    handOver: () => void (settled = true),
  };
}

/**
 * The units one sign holds in billing, from the reserve to the settling, owned in one place: the modality's unit
 * (reserved as soon as the request is read, beside the idempotency claim) and, for a BYOK sign, byok_sign on top.
 * Each ends exactly once: given back when the request does not run, released when it fails or the signer
 * answered a recorded sign, handed over to billing when the sign (or its job) records them.
 */
export class SignMeter {
  readonly #reserved: Promise<MeteredUnit>;
  #unit: MeteredUnit | undefined;
  #byok: MeteredUnit | undefined;

  private constructor(
    private readonly billing: Metering,
    private readonly tenant: Tenant,
    reserved: Promise<MeteredUnit>,
  ) {
    this.#reserved = reserved;
    // A refusal (quota, billing down) may arrive while the caller awaits something else: it is read by `hold`,
    // never unhandled.
    reserved.catch(() => undefined);
  }

  /** Asks billing for one unit of `meter` now; the answer is awaited by `hold`. */
  static reserve(billing: Metering, tenant: Tenant, meter: string): SignMeter {
    return new SignMeter(
      billing,
      tenant,
      inSpan('gateway.sign.reserve', () => reserveUnit(billing, tenant, meter)),
    );
  }

  /**
   * The request will not run (a replay, a busy key, no slot, a failed claim): the unit goes back once reserved,
   * without the answer waiting for it. A refused reserve holds no unit: nothing to release, nothing to report.
   */
  giveBack(): void {
    void this.#reserved.then(
      (unit) => unit.release(),
      () => undefined,
    );
  }

  /**
   * Waits for the reserve (throwing its refusal) and, for a BYOK sign, reserves byok_sign on top: the
   * reservation ids the sign names in asset.signed.
   */
  async hold(byok: boolean): Promise<{ reservationId: string; byokReservationId: string }> {
    this.#unit = await this.#reserved;
    if (byok) this.#byok = await reserveUnit(this.billing, this.tenant, 'byok_sign');
    return { reservationId: this.#unit.reservationId, byokReservationId: this.#byok?.reservationId ?? '' };
  }

  /** Releases what `hold` holds: the sign failed, or the signer answered a recorded sign that named its own. */
  async release(): Promise<void> {
    await this.#unit?.release();
    await this.#byok?.release();
  }

  /**
   * The sign recorded its answer: asset.signed (written in the same transaction) names these reservations and
   * billing commits them from it (consumer billing-sign-settlement), or a job settles them when it ends (billing
   * reads job.completed / job.failed). The answer does not wait for a Commit round trip; usage lags it by the
   * event's delivery (docs/decisions/0022-billing-settled-from-events.md).
   */
  handOver(): void {
    this.#unit?.handOver();
    this.#byok?.handOver();
  }
}
