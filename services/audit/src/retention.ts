import { sql } from 'drizzle-orm';
import type { GenService } from '@bufbuild/protobuf/codegenv2';
import { isPlanName, PLANS } from '@cairn/catalog';
import type { Database } from '@cairn/db';
import { CairnError } from '@cairn/errors';
import type { Logger } from '@cairn/logging';
import type { tenantV1 } from '@cairn/proto';
import type { ServiceClient } from '@cairn/rpc';
import { purgeExpired } from './rpc.js';

export type TenantClient = ServiceClient<typeof tenantV1.TenantService extends GenService<infer M> ? M : never>;

/** Retention when the tenant has no audit_retention_days of its own: its plan's default (spec: Audit, retention). */
export function retentionDays(tenant: Pick<tenantV1.Tenant, 'plan' | 'auditRetentionDays'>): number {
  if (tenant.auditRetentionDays > 0) return tenant.auditRetentionDays;
  // A plan this version does not know keeps the shortest default.
  return isPlanName(tenant.plan)
    ? PLANS[tenant.plan].audit.defaultRetentionDays
    : PLANS.free.audit.defaultRetentionDays;
}

/** The tenants that have entries (a loose index scan over entries_tenant_seq_idx), read under the narrow listing policy. */
export async function tenantsWithEntries(db: Database): Promise<string[]> {
  return db.transaction(async (tx) => {
    await tx.execute(sql`select set_config('cairn.system', 'audit-retention', true)`);
    const result = await tx.execute<{ tenant_id: string }>(sql`
      with recursive t(tenant_id) as (
        (select tenant_id from audit.entries order by tenant_id limit 1)
        union all
        select (select e.tenant_id from audit.entries e where e.tenant_id > t.tenant_id order by e.tenant_id limit 1) from t where t.tenant_id is not null
      )
      select tenant_id from t where tenant_id is not null`);
    return result.rows.map((row) => row.tenant_id);
  });
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
  tenants: TenantClient;
  logger: Logger;
  now?: () => Date;
}): Promise<RetentionSweepResult> {
  const result: RetentionSweepResult = { tenants: 0, purged: 0, failed: 0 };
  for (const tenantId of await tenantsWithEntries(deps.db)) {
    result.tenants++;
    try {
      const { tenant } = await deps.tenants.getTenant({ tenantId });
      if (!tenant) continue;
      const days = retentionDays(tenant);
      const { purged, checkpointSeq } = await purgeExpired(deps.db, tenantId, days, deps.now?.() ?? new Date());
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
