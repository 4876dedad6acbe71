import type { billingV1 } from '@cairn/proto';
import type { ClientOf } from '@cairn/rpc';
import type { Tenant } from '../adapters/tenant-directory.js';

export type BillingClient = ClientOf<typeof billingV1.BillingService>;

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
export async function reserveUnit(billing: BillingClient, tenant: Tenant, meter: string): Promise<MeteredUnit> {
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
