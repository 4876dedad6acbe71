import { and, eq, sql } from 'drizzle-orm';
import { JobRows, withTenant, type Database } from '@cairn/db';
import type { JobRow, SignJobRecords } from '../app/ports.js';
import { jobs, type StoredJobProgress } from '../db/assets-schema.js';

/** The rows of sign jobs, each read and written under its tenant (row-level security). */
export class SignJobStore extends JobRows<typeof jobs> implements SignJobRecords {
  constructor(db: Database) {
    super(db, jobs);
  }

  /**
   * The job of a sign, one per asset id: a second EnqueueSign of the same asset id (its caller died before
   * recording the first answer) finds the first job (`created: false`); undefined when another tenant's job holds
   * that asset id.
   */
  async create(
    tenantId: string,
    jobId: string,
    assetId: string,
    request: unknown,
  ): Promise<{ row: JobRow; created: boolean } | undefined> {
    return withTenant(this.db, tenantId, async (tx) => {
      const [row] = await tx
        .insert(jobs)
        .values({ jobId, tenantId, status: 'queued', request })
        .onConflictDoNothing()
        .returning();
      if (row) return { row, created: true };
      const [existing] = await tx
        .select()
        .from(jobs)
        .where(and(sql`${jobs.request}->>'assetId' = ${assetId}`, eq(jobs.tenantId, tenantId)));
      return existing ? { row: existing, created: false } : undefined;
    });
  }

  /**
   * A running job's progress. Only while it runs: a write that lands after the job ended (done or failed in another
   * transaction) changes nothing. Never below the fraction already shown: a retried attempt starts again from 0, and
   * the row holds the earlier attempt's stage and fraction until the new one passes it. Leaves updated_at (the job's
   * last change of state) alone.
   */
  async markProgress(tenantId: string, jobId: string, progress: StoredJobProgress): Promise<void> {
    await withTenant(this.db, tenantId, (tx) =>
      tx
        .update(jobs)
        .set({ progress })
        .where(
          and(
            eq(jobs.jobId, jobId),
            eq(jobs.tenantId, tenantId),
            eq(jobs.status, 'running'),
            sql`coalesce((${jobs.progress} ->> 'fraction')::float8, 0) <= ${progress.fraction}`,
          ),
        ),
    );
  }
}
