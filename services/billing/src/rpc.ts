import { CairnError } from '@cairn/errors';
import { toTimestamp, type billingV1 } from '@cairn/proto';
import type { ImplOf } from '@cairn/rpc';
import { isMeter, isPlanName, type Meter, type PlanName } from '@cairn/catalog';
import type { Metering } from './app/metering.js';

const MAX_QUANTITY = 10_000;

function required(value: string, name: string): string {
  if (!value) throw new CairnError('cairn.validation.invalid_body', `${name} is required`);
  return value;
}

function meterOf(value: string): Meter {
  if (!isMeter(value)) throw new CairnError('cairn.validation.invalid_body', `Unknown meter "${value}"`);
  return value;
}

function planOf(value: string): PlanName {
  if (!isPlanName(value)) throw new CairnError('cairn.validation.invalid_body', `Unknown plan "${value}"`);
  return value;
}

/** cairn.billing.v1.BillingService: metering (reserve/commit/release), usage and quota overrides. */
export function billingHandlers(metering: Metering): ImplOf<typeof billingV1.BillingService> {
  return {
    reserve: async (request) => {
      const quantity = request.quantity || 1;
      if (quantity < 1 || quantity > MAX_QUANTITY)
        throw new CairnError('cairn.validation.invalid_body', `quantity must be 1..${MAX_QUANTITY}`);
      const cap = request.spendingCapUsd;
      if (cap !== undefined && (!Number.isFinite(cap) || cap < 0))
        throw new CairnError('cairn.validation.invalid_body', 'spending_cap_usd must be a non-negative number');
      const reservation = await metering.reserve({
        tenantId: required(request.tenantId, 'tenant_id'),
        meter: meterOf(request.meter),
        plan: planOf(request.plan),
        spendingCapUsd: cap ?? null,
        quantity,
        ...(request.reservationId ? { reservationId: request.reservationId } : {}),
      });
      return {
        reservationId: reservation.reservationId,
        used: BigInt(reservation.used),
        limit: BigInt(reservation.limit),
        overageUnits: BigInt(reservation.overageUnits),
        overageUsd: reservation.overageUsd,
      };
    },
    commit: async (request) => ({
      status: await metering.commit(
        required(request.tenantId, 'tenant_id'),
        required(request.reservationId, 'reservation_id'),
      ),
    }),
    release: async (request) => ({
      status: await metering.release(
        required(request.tenantId, 'tenant_id'),
        required(request.reservationId, 'reservation_id'),
      ),
    }),
    getUsage: async (request) => {
      const usage = await metering.usage(required(request.tenantId, 'tenant_id'), planOf(request.plan));
      return {
        periodStart: toTimestamp(usage.periodStart),
        periodEnd: toTimestamp(usage.periodEnd),
        spendUsd: usage.spendUsd,
        meters: usage.meters.map((m) => ({
          meter: m.meter,
          used: BigInt(m.used),
          limit: BigInt(m.limit),
          reserved: BigInt(m.reserved),
          overageUnits: BigInt(m.overageUnits),
        })),
      };
    },
    setQuota: async (request) => {
      await metering.setQuota(required(request.tenantId, 'tenant_id'), meterOf(request.meter), Number(request.quota));
      return {};
    },
    sweepExpired: async (request) => ({
      released: await metering.sweepExpired(request.olderThanSeconds > 0 ? request.olderThanSeconds : undefined),
    }),
  };
}
