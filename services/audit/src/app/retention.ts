import { isPlanName, PLANS } from '@cairn/catalog';
import type { Database } from '@cairn/db';
import { CairnError } from '@cairn/errors';
import type { Logger } from '@cairn/logging';
import type { tenantV1 } from '@cairn/proto';
import type { ClientOf } from '@cairn/rpc';
import type { ChainEntries } from './ports.js';

export type TenantClient = ClientOf<typeof tenantV1.TenantService>;

/** Retention when the tenant has no audit_retention_days of its own: its plan's default (spec: Audit, retention). */
export function retentionDays(tenant: Pick<tenantV1.Tenant, 'plan' | 'auditRetentionDays'>): number {
  if (tenant.auditRetentionDays > 0) return tenant.auditRetentionDays;
  // A plan this version does not know keeps the shortest default.
  return isPlanName(tenant.plan)
    ? PLANS[tenant.plan].audit.defaultRetentionDays
    : PLANS.free.audit.defaultRetentionDays;
}

/**
 * Retention: deletes the tenant's entries recorded more than `retentionDays` ago, oldest first, and moves the
 * checkpoint to the last one deleted so the surviving chain still verifies from there.
 */
export async function purgeExpired(
  entries: ChainEntries,
  db: Database,
  tenantId: string,
  retentionDays: number,
  now = new Date(),
): Promise<{ purged: number; checkpointSeq: number }> {
  if (retentionDays < 1) throw new CairnError('cairn.validation.invalid_body', 'retention_days must be at least 1');
  return entries.purgeRecordedBefore(db, tenantId, new Date(now.getTime() - retentionDays * 86_400_000), now);
}

export interface RetentionSweepResult {
  tenants: number;
  purged: number;
  failed: number;
}

/**
 * One pass of the scheduled retention purge: each tenant with entries gets its retention from the tenant service and
 * loses the entries recorded before it (purgeExpired: a prefix of the chain, checkpointed so the rest verifies).
 * A tenant the tenant service does not know is skipped (its entries are kept); one failure does not stop the others.
 */
export async function purgeAllExpired(deps: {
  db: Database;
  entries: ChainEntries;
  tenants: TenantClient;
  logger: Logger;
  now?: () => Date;
}): Promise<RetentionSweepResult> {
  const result: RetentionSweepResult = { tenants: 0, purged: 0, failed: 0 };
  for (const tenantId of await deps.entries.tenantsWithEntries(deps.db)) {
    result.tenants++;
    try {
      const { tenant } = await deps.tenants.getTenant({ tenantId });
      if (!tenant) continue;
      const days = retentionDays(tenant);
      const { purged, checkpointSeq } = await purgeExpired(
        deps.entries,
        deps.db,
        tenantId,
        days,
        deps.now?.() ?? new Date(),
      );
      if (purged > 0)
        deps.logger.info(
          { tenant_id: tenantId, purged, checkpoint_seq: checkpointSeq, retention_days: days },
          'purged audit entries past retention',
        );
      result.purged += purged;
    } catch (error) {
      if (error instanceof CairnError && error.code === 'cairn.not_found') {
        deps.logger.debug(
          { tenant_id: tenantId },
          'audit retention: tenant unknown to the tenant service, entries kept',
        );
        continue;
      }
      result.failed++;
      deps.logger.error({ err: error, tenant_id: tenantId }, 'audit retention purge failed for a tenant');
    }
  }
  return result;
}
