import { and, eq, isNull } from 'drizzle-orm';
import { rowOrNull, withTenant, type Database, type Tx } from '@cairn/db';
import type { CredentialRecords, CredentialRow } from '../app/ports.js';
import { signingCredentials } from '../db/schema.js';

/** A tenant's BYOK credentials, under its row-level security. */
export class CredentialStore implements CredentialRecords {
  constructor(private readonly db: Database) {}

  /** `alsoInTx` runs in the insert's transaction (the audit event), so both commit or neither. */
  async insert(
    alsoInTx: (tx: Tx, inserted: CredentialRow) => Promise<void>,
    row: Omit<CredentialRow, 'createdAt' | 'deletedAt'>,
  ): Promise<CredentialRow> {
    return withTenant(this.db, row.tenantId, async (tx) => {
      const [inserted] = await tx.insert(signingCredentials).values(row).returning();
      if (!inserted) throw new Error('credential insert returned nothing');
      await alsoInTx(tx, inserted);
      return inserted;
    });
  }

  get(tenantId: string, credentialId: string): Promise<CredentialRow | null> {
    return withTenant(this.db, tenantId, (tx) =>
      rowOrNull(
        tx
          .select()
          .from(signingCredentials)
          .where(
            and(
              eq(signingCredentials.credentialId, credentialId),
              eq(signingCredentials.tenantId, tenantId),
              isNull(signingCredentials.deletedAt),
            ),
          ),
      ),
    );
  }

  list(tenantId: string): Promise<CredentialRow[]> {
    return withTenant(this.db, tenantId, (tx) =>
      tx
        .select()
        .from(signingCredentials)
        .where(and(eq(signingCredentials.tenantId, tenantId), isNull(signingCredentials.deletedAt)))
        .orderBy(signingCredentials.createdAt),
    );
  }

  /** `alsoInTx` runs in the deletion's transaction with the deleted row (the audit event). */
  async delete(
    tenantId: string,
    credentialId: string,
    alsoInTx: (tx: Tx, deleted: CredentialRow) => Promise<void>,
  ): Promise<boolean> {
    return withTenant(this.db, tenantId, async (tx) => {
      const deleted = await tx
        .update(signingCredentials)
        .set({ deletedAt: new Date() })
        .where(
          and(
            eq(signingCredentials.credentialId, credentialId),
            eq(signingCredentials.tenantId, tenantId),
            isNull(signingCredentials.deletedAt),
          ),
        )
        .returning();
      for (const row of deleted) await alsoInTx(tx, row);
      return deleted.length > 0;
    });
  }
}
