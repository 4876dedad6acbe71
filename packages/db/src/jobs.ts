import { and, eq } from 'drizzle-orm';
import type { PgColumn, PgTable } from 'drizzle-orm/pg-core';
import { rowOrNull, withTenant, type Database, type Tx } from './tenant.js';

/** A table of asynchronous jobs: what every service's job rows have, whatever else each holds. */
export type JobTable = PgTable & { jobId: PgColumn; tenantId: PgColumn; status: PgColumn; updatedAt: PgColumn };

/**
 * The rows of a service's asynchronous jobs (the signer's sign jobs, the verifier's verify jobs), each read and
 * written under its tenant (row-level security). Creating one is the service's own: what a job holds differs.
 */
export class JobRows<T extends JobTable> {
  constructor(
    protected readonly db: Database,
    protected readonly table: T,
  ) {}

  get(tenantId: string, jobId: string): Promise<T['$inferSelect'] | null> {
    const { table } = this;
    return withTenant(this.db, tenantId, (tx) =>
      // Drizzle cannot name a generic table's selected row; it is the table's row, as for any table.
      rowOrNull<T['$inferSelect']>(
        tx
          .select()
          .from(table as PgTable)
          .where(and(eq(table.jobId, jobId), eq(table.tenantId, tenantId))),
      ),
    );
  }

  /** Removes a job nobody was told about (its queue item was refused), while it is still only queued. */
  async deleteQueued(tenantId: string, jobId: string): Promise<void> {
    const { table } = this;
    await withTenant(this.db, tenantId, (tx) =>
      tx.delete(table).where(and(eq(table.jobId, jobId), eq(table.tenantId, tenantId), eq(table.status, 'queued'))),
    );
  }

  /** Changes the job's row in the caller's transaction (with the event telling it, when it ends). */
  async mark(tx: Tx, jobId: string, fields: Partial<T['$inferSelect']>): Promise<void> {
    const { table } = this;
    await tx
      .update(table)
      .set({ ...fields, updatedAt: new Date() })
      .where(eq(table.jobId, jobId));
  }
}
