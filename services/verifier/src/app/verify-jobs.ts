import { create, toJson } from '@bufbuild/protobuf';
import type { BlobStore } from '@cairn/blob';
import { type WorkQueue } from '@cairn/bus';
import { newEvent } from '@cairn/events';
import { JobRunner, TRANSIENT_JOB_ERRORS, type JobItem, type JobRun } from '@cairn/runtime';
import { newId } from '@cairn/ids';
import type { Logger } from '@cairn/logging';
import { verifierV1 } from '@cairn/proto';
import { toResultMessage } from '../domain/result-message.js';
import type { VerifyJobRecords, VerifyJobRow } from './ports.js';
import { verify, type VerifyDeps } from './verify/index.js';

export type VerifyJobItem = JobItem;

/**
 * Asynchronous verifies, run by the jobs' runner (JobRunner of @cairn/runtime: retries, the attempts' budget, the
 * end in one transaction with its event, the upload deleted either way). A job ends with verification.completed
 * (the reservation is committed) or job.failed (released).
 */
export class VerifyJobs {
  readonly #runner: JobRunner<VerifyJobRow, VerifyJobRow>;

  constructor(
    private readonly deps: VerifyDeps & { jobs: VerifyJobRecords; blobs: BlobStore },
    queue: WorkQueue<VerifyJobItem>,
    logger: Logger,
  ) {
    this.#runner = new JobRunner(
      { db: deps.db, outbox: deps.outbox, blobs: deps.blobs, logger, queue },
      {
        what: 'verify',
        records: deps.jobs,
        // A peer or this service was briefly away.
        transient: TRANSIENT_JOB_ERRORS,
        exhaustedCode: 'cairn.unavailable',
        input: (row) => row,
        uploadKey: (job) => job.uploadBlobKey,
        failedEvent: (item, job, problem) =>
          newEvent('job.failed', item.tenantId, {
            job_id: item.jobId,
            reservation_id: job.reservationId || null,
            kind: 'verify',
            problem,
          }),
        work: (run) => this.verifyJob(run),
      },
    );
  }

  async enqueue(tenantId: string, uploadBlobKey: string, reservationId: string): Promise<string> {
    const jobId = newId('job');
    await this.deps.jobs.create(tenantId, jobId, uploadBlobKey, reservationId);
    await this.#runner.enqueue({ jobId, tenantId });
    return jobId;
  }

  /** The tenant's job, or null when it has none by that id. */
  get(tenantId: string, jobId: string): Promise<VerifyJobRow | null> {
    return this.deps.jobs.get(tenantId, jobId);
  }

  run(item: VerifyJobItem, attempt: number, maxAttempts: number): Promise<void> {
    return this.#runner.run(item, attempt, maxAttempts);
  }

  private async verifyJob({ item, input: job, done }: JobRun<VerifyJobRow>): Promise<void> {
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
    await done(
      result,
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
  }
}
