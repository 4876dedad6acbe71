import { and, eq } from 'drizzle-orm';
import { rowOrNull, withTenant, type Database, type Tx } from '@cairn/db';
import type { VerifyJobFields, VerifyJobRecords, VerifyJobRow } from '../app/ports.js';
import { verifyJobs } from '../db/schema.js';

/** The rows of asynchronous verifies, each read and written under its tenant (row-level security). */
export class VerifyJobStore implements VerifyJobRecords {
  constructor(private readonly db: Database) {}

  async create(tenantId: string, jobId: string, uploadBlobKey: string, reservationId: string): Promise<void> {
    await withTenant(this.db, tenantId, (tx) =>
      tx.insert(verifyJobs).values({ jobId, tenantId, status: 'queued', uploadBlobKey, reservationId }),
    );
  }

  /** Removes a job nobody was told about (its queue item was refused), while it is still only queued. */
  async deleteQueued(tenantId: string, jobId: string): Promise<void> {
    await withTenant(this.db, tenantId, (tx) =>
      tx
        .delete(verifyJobs)
        .where(and(eq(verifyJobs.jobId, jobId), eq(verifyJobs.tenantId, tenantId), eq(verifyJobs.status, 'queued'))),
    );
  }

  get(tenantId: string, jobId: string): Promise<VerifyJobRow | null> {
    return withTenant(this.db, tenantId, (tx) =>
      rowOrNull(
        tx
          .select()
          .from(verifyJobs)
          .where(and(eq(verifyJobs.jobId, jobId), eq(verifyJobs.tenantId, tenantId))),
      ),
    );
  }

  async mark(tx: Tx, jobId: string, fields: VerifyJobFields): Promise<void> {
    await tx
      .update(verifyJobs)
      .set({ ...fields, updatedAt: new Date() })
      .where(eq(verifyJobs.jobId, jobId));
  }
}
