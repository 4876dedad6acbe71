import { eq } from 'drizzle-orm';
import { withTenant, type Database } from '@cairn/db';
import type { TrustListRows } from '../app/trust-lists.js';
import type { TrustEntry } from '../domain/trust-entries.js';
import { trustLists } from '../db/schema.js';

/** verifier.trust_lists: each enterprise tenant's own trust list, under row-level security. */
export class TrustListStore implements TrustListRows {
  constructor(private readonly db: Database) {}

  async get(tenantId: string): Promise<TrustEntry[] | undefined> {
    const row = await withTenant(
      this.db,
      tenantId,
      async (tx) => (await tx.select().from(trustLists).where(eq(trustLists.tenantId, tenantId)))[0],
    );
    return row?.entries;
  }

  async put(tenantId: string, entries: TrustEntry[], updatedAt: Date): Promise<void> {
    await withTenant(this.db, tenantId, (tx) =>
      tx
        .insert(trustLists)
        .values({ tenantId, entries, updatedAt })
        .onConflictDoUpdate({ target: trustLists.tenantId, set: { entries, updatedAt } }),
    );
  }

  async remove(tenantId: string): Promise<void> {
    await withTenant(this.db, tenantId, (tx) => tx.delete(trustLists).where(eq(trustLists.tenantId, tenantId)));
  }
}
