import { sql } from 'drizzle-orm';
import type { Database } from '@cairn/db';
import { tenants } from '../db/schema.js';

/**
 * Refuses to start while this schema still holds tenants from before the tenant service existed: they would
 * be invisible to it, so every key of theirs would answer 401 with nothing saying why. The operator imports them
 * once (`pnpm cairn admin import-gateway-tenants`, which empties these tables), then the gateway starts.
 */
export async function assertNoLegacyTenants(db: Database): Promise<void> {
  const left = await db.transaction(async (tx) => {
    await tx.execute(sql`select set_config('cairn.system', 'tenant-handover', true)`);
    return (await tx.select({ id: tenants.tenantId }).from(tenants).limit(1)).length > 0;
  });
  if (left)
    throw new Error(
      'gateway.tenants still holds tenants from before the tenant service: run `pnpm cairn admin import-gateway-tenants` once (docs/decisions/0037-tenant-service.md), then start the gateway again',
    );
}
