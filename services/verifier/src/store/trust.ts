import { eq } from 'drizzle-orm';
import { withTenant, type Database, type Tx } from '@cairn/db';
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

  /** `alsoInTx` runs in the write's transaction with the list it replaces (the audit event). */
  async put(
    tenantId: string,
    entries: TrustEntry[],
    updatedAt: Date,
    alsoInTx: (tx: Tx, before: TrustEntry[] | undefined) => Promise<void>,
  ): Promise<void> {
    await withTenant(this.db, tenantId, async (tx) => {
      const before = await this.locked(tx, tenantId);
      await tx
        .insert(trustLists)
        .values({ tenantId, entries, updatedAt })
        .onConflictDoUpdate({ target: trustLists.tenantId, set: { entries, updatedAt } });
      await alsoInTx(tx, before);
    });
  }

  /** `alsoInTx` runs in the deletion's transaction with the list deleted, when there was one. */
  async remove(tenantId: string, alsoInTx: (tx: Tx, before: TrustEntry[]) => Promise<void>): Promise<void> {
    await withTenant(this.db, tenantId, async (tx) => {
      const before = await this.locked(tx, tenantId);
      await tx.delete(trustLists).where(eq(trustLists.tenantId, tenantId));
      if (before) await alsoInTx(tx, before);
    });
  }

  private async locked(tx: Tx, tenantId: string): Promise<TrustEntry[] | undefined> {
    const [row] = await tx.select().from(trustLists).where(eq(trustLists.tenantId, tenantId)).for('update');
    return row?.entries;
  }
}
