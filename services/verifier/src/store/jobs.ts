import { JobRows, withTenant, type Database } from '@cairn/db';
import type { VerifyJobRecords } from '../app/ports.js';
import { verifyJobs } from '../db/schema.js';

/** The rows of asynchronous verifies, each read and written under its tenant (row-level security). */
export class VerifyJobStore extends JobRows<typeof verifyJobs> implements VerifyJobRecords {
  constructor(db: Database) {
    super(db, verifyJobs);
  }

  async create(tenantId: string, jobId: string, uploadBlobKey: string, reservationId: string): Promise<void> {
    await withTenant(this.db, tenantId, (tx) =>
      tx.insert(verifyJobs).values({ jobId, tenantId, status: 'queued', uploadBlobKey, reservationId }),
    );
  }
}
