import { newEvent } from '@cairn/events';
import { withTenant, type Database } from '@cairn/db';
import type { Outbox } from '@cairn/runtime';

/** Writes a tenant's asset.lookup to the outbox (the audit log, and the lookup meter's evidence), sent at once. */
export function lookupRecorder(db: Database, outbox: Outbox) {
  return async (tenantId: string, matches: number): Promise<void> => {
    await withTenant(db, tenantId, (tx) =>
      outbox.enqueue(tx, newEvent('asset.lookup', tenantId, { matches, 'billing.meter': 'lookup' })),
    );
    void outbox.flush();
  };
}
