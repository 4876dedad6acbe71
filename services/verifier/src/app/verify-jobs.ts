import { create, toJson } from '@bufbuild/protobuf';
import type { BlobStore } from '@cairn/blob';
import { type WorkQueue } from '@cairn/bus';
import { newEvent, type AnyEvent } from '@cairn/events';
import { withTenant } from '@cairn/db';
import { asCairnError, CairnError, toJobProblem } from '@cairn/errors';
import { unqueued } from '@cairn/runtime';
import { newId } from '@cairn/ids';
import type { Logger } from '@cairn/logging';
import { verifierV1 } from '@cairn/proto';
import { toResultMessage } from '../domain/result-message.js';
import type { VerifyJobFields, VerifyJobRecords, VerifyJobRow } from './ports.js';
import { verify, type VerifyDeps } from './verify/index.js';

export interface VerifyJobItem {
  jobId: string;
  tenantId: string;
}

/** Failures worth another attempt: a peer or this service was briefly away. */
const TRANSIENT = new Set(['cairn.unavailable', 'cairn.internal_error']);

/**
 * Asynchronous verifies. The job row is the truth about a job; the work queue carries only "run job X", so a verifier
 * that dies mid-job leaves the item unacknowledged and the next delivery runs it again, and a job already done or
 * failed is skipped. It ends with verification.completed (the reservation is committed) or job.failed (released),
 * and the upload is deleted either way.
 */
export class VerifyJobs {
  constructor(
    private readonly deps: VerifyDeps & { jobs: VerifyJobRecords; blobs: BlobStore },
    private readonly queue: WorkQueue<VerifyJobItem>,
    private readonly logger: Logger,
  ) {}

  async enqueue(tenantId: string, uploadBlobKey: string, reservationId: string): Promise<string> {
    const jobId = newId('job');
    await this.deps.jobs.create(tenantId, jobId, uploadBlobKey, reservationId);
    try {
      await this.queue.enqueue({ jobId, tenantId }, jobId);
    } catch (error) {
      throw await unqueued('verify', error, () => this.deps.jobs.deleteQueued(tenantId, jobId), this.logger);
    }
    return jobId;
  }

  /** The tenant's job, or null when it has none by that id. */
  get(tenantId: string, jobId: string): Promise<VerifyJobRow | null> {
    return this.deps.jobs.get(tenantId, jobId);
  }

  async run(item: VerifyJobItem, attempt: number, maxAttempts: number): Promise<void> {
    const job = await this.deps.jobs.get(item.tenantId, item.jobId);
    if (!job || job.status === 'done' || job.status === 'failed') return;
    // Best effort: the job's outcome is recorded either way; a failed delete leaves an unreferenced upload blob.
    const finished = () => this.deps.blobs.delete(job.uploadBlobKey).catch(() => undefined);
    // The queue delivers once more than maxAttempts: a delivery past the budget means no attempt ever answered.
    if (attempt > maxAttempts) {
      await this.fail(
        item,
        job.reservationId,
        new CairnError('cairn.unavailable', `The verify was attempted ${maxAttempts} times and never finished.`),
      );
      await finished();
      return;
    }
    await withTenant(this.deps.db, item.tenantId, (tx) =>
      this.deps.jobs.mark(tx, item.jobId, { status: 'running', attempts: attempt }),
    );
    try {
      const outcome = await verify(
        this.deps,
        create(verifierV1.VerifyRequestSchema, {
          tenantId: item.tenantId,
          input: { case: 'uploadBlobKey', value: job.uploadBlobKey },
        }),
      );
      const result = toJson(
        verifierV1.VerificationResultSchema,
        create(verifierV1.VerificationResultSchema, toResultMessage(outcome.verdict, outcome)),
      );
      await this.end(
        item,
        { status: 'done', result },
        newEvent('verification.completed', item.tenantId, {
          job_id: item.jobId,
          reservation_id: job.reservationId || null,
          status: outcome.verdict.status,
          confidence: outcome.verdict.confidence,
          manifest_id: outcome.manifestId ?? null,
          asset_id: outcome.assetId ?? null,
          media_type: outcome.modality,
        }),
      );
      await finished();
    } catch (error) {
      const known = asCairnError(error, 'The verify failed unexpectedly.');
      if (TRANSIENT.has(known.code) && attempt < maxAttempts) throw error;
      this.logger.warn({ err: error, job_id: item.jobId, code: known.code }, 'verify job failed');
      await this.fail(item, job.reservationId, known);
      await finished();
    }
  }

  private async fail(item: VerifyJobItem, reservationId: string, known: CairnError): Promise<void> {
    const problem = toJobProblem(known);
    await this.end(
      item,
      { status: 'failed', problem },
      newEvent('job.failed', item.tenantId, {
        job_id: item.jobId,
        reservation_id: reservationId || null,
        kind: 'verify',
        problem,
      }),
    );
  }

  /** The job's end and the event that tells it commit together, so billing settles exactly the jobs that ended. */
  private async end(item: VerifyJobItem, fields: VerifyJobFields, event: AnyEvent): Promise<void> {
    await withTenant(this.deps.db, item.tenantId, async (tx) => {
      await this.deps.jobs.mark(tx, item.jobId, fields);
      await this.deps.outbox.enqueue(tx, event);
    });
    void this.deps.outbox.flush();
  }
}
