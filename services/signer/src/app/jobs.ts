import { create, fromJson, toJson, type JsonValue } from '@bufbuild/protobuf';
import { z } from 'zod';
import { type WorkQueue } from '@cairn/bus';
import { newEvent, type EventDataInput } from '@cairn/events';
import { CairnError, type ErrorCode } from '@cairn/errors';
import { JobRunner, TRANSIENT_JOB_ERRORS, type JobItem, type JobRun } from '@cairn/runtime';
import { isId, newId } from '@cairn/ids';
import type { Logger } from '@cairn/logging';
import { anchorBatchStates, signerV1, type AnchorBatchStateName } from '@cairn/proto';
import { parseSignMetadata } from '../domain/metadata.js';
import type { StoredJobProgress } from '../db/assets-schema.js';
import type { JobRow, SignJobRecords } from './ports.js';
import { JobProgressWriter } from './job-progress.js';
import { signAsset, type PipelineDeps, type SignRequest, type SignResult } from './sign/index.js';

/**
 * A done job's result as stored (jsonb): the SignResult's fields. Rows written before the internal API was typed
 * (docs/decisions/0005-shared-enums-and-timestamps.md) hold the same fields in protobuf JSON, which leaves empty
 * strings out; both read the same way.
 */
const storedResultSchema = z.object({
  assetId: z.string(),
  watermarkId: z.string().default(''),
  manifestId: z.string(),
  manifestUri: z.string(),
  verifierUrl: z.string(),
  assetUrl: z.string().default(''),
  mediaType: z.string().default(''),
  anchor: z
    .object({
      batchId: z.string(),
      status: z.custom<AnchorBatchStateName>((v) => typeof v === 'string' && anchorBatchStates.is(v)),
    })
    .optional(),
  createdAt: z.string(),
  expiresAt: z.string(),
  warnings: z.array(z.literal('watermark_not_embedded')).optional(),
  watermarkNotEmbeddedReason: z.string().optional(),
});

/** The SignResult of a done job's stored result; a row that does not hold one is an error, never a blank result. */
export function storedSignResult(stored: unknown): SignResult {
  const parsed = storedResultSchema.safeParse(stored);
  if (!parsed.success)
    throw new CairnError('cairn.internal_error', `stored sign result unreadable: ${parsed.error.message}`);
  const { anchor, ...fields } = parsed.data;
  return { ...fields, ...(anchor ? { anchor } : {}) };
}

/** A done job's progress: all of it (the writer stops before the end, so its last write may be a step short). */
function finalProgress(): StoredJobProgress {
  return { stage: 'storing', fraction: 1, updatedAt: new Date().toISOString() };
}

export type SignJobItem = JobItem;

/** Failures worth another attempt: the key service or a peer was briefly away, or the C2PA worker died on it. */
const TRANSIENT: ReadonlySet<ErrorCode> = new Set<ErrorCode>([
  ...TRANSIENT_JOB_ERRORS,
  'cairn.signer.unavailable',
  'cairn.sign.worker_failed',
  // Another attempt is signing this asset id (its claim lapses if its signer died).
  'cairn.idempotency.in_progress',
]);

export function jobCompletedData(
  jobId: string,
  recipeId: string,
  result: SignResult,
  reservationId: string,
  byokReservationId = '',
): EventDataInput<'job.completed'> {
  return {
    job_id: jobId,
    reservation_id: reservationId || null,
    ...(byokReservationId ? { byok_reservation_id: byokReservationId } : {}),
    asset_id: result.assetId,
    watermark_id: result.watermarkId || null,
    manifest_uri: result.manifestUri,
    verifier_url: result.verifierUrl,
    recipe_id: recipeId,
    anchor: result.anchor ? { batch_id: result.anchor.batchId, status: result.anchor.status } : null,
  };
}

/**
 * Asynchronous signs, run by the jobs' runner (JobRunner of @cairn/runtime: a job already done or failed skipped,
 * retries, the attempts' budget, the end in one transaction with its event, the upload deleted either way). A
 * job's done is committed with its asset (signAsset's onCommitted), so a job is done exactly when its sign is
 * recorded.
 */
export class SignJobs {
  readonly #runner: JobRunner<JobRow, signerV1.SignRequest>;

  constructor(
    private readonly deps: PipelineDeps & { jobs: SignJobRecords },
    queue: WorkQueue<SignJobItem>,
    private readonly logger: Logger,
  ) {
    const { jobs } = deps;
    this.#runner = new JobRunner(
      { db: deps.db, outbox: deps.outbox, blobs: deps.blobs, logger, queue },
      {
        what: 'sign',
        records: {
          get: (tenantId, jobId) => jobs.get(tenantId, jobId),
          deleteQueued: (tenantId, jobId) => jobs.deleteQueued(tenantId, jobId),
          // The progress an earlier attempt reached stays while the job runs: what GET /v1/jobs shows never falls
          // (markProgress); a done job's is all of it.
          mark: (tx, jobId, fields) =>
            jobs.mark(tx, jobId, fields.status === 'done' ? { ...fields, progress: finalProgress() } : fields),
        },
        transient: TRANSIENT,
        exhaustedCode: 'cairn.sign.worker_failed',
        input: (row) => fromJson(signerV1.SignRequestSchema, row.request as JsonValue),
        uploadKey: (request) => request.uploadBlobKey,
        failedEvent: (item, request, problem) =>
          newEvent('job.failed', item.tenantId, {
            job_id: item.jobId,
            reservation_id: request.reservationId || null,
            ...(request.byokReservationId ? { byok_reservation_id: request.byokReservationId } : {}),
            recipe_id: request.recipe?.recipeId ?? null,
            problem,
          }),
        work: (run) => this.sign(run),
      },
    );
  }

  /**
   * Creates the job of a sign and queues it, once per asset id: the same asset id again (a caller that died before
   * recording the first answer, retried) answers the first job, `replayed`, and queues nothing; its caller must not
   * bill it again (the first job's reservation is settled by that job's outcome).
   */
  async enqueue(request: SignRequest): Promise<{ jobId: string; status: JobRow['status']; replayed: boolean }> {
    // Validated before the job row is written: a field the sign would refuse (prompt text above all) must
    // never reach the jobs table, whoever calls EnqueueSign.
    const metadata = Object.fromEntries(
      Object.entries(parseSignMetadata(request.metadata)).filter(
        (e): e is [string, string] => typeof e[1] === 'string',
      ),
    );
    const jobId = newId('job');
    const stored = toJson(
      signerV1.SignRequestSchema,
      create(signerV1.SignRequestSchema, { ...request, metadata, jobId }),
    );
    const job = await this.deps.jobs.create(request.tenantId, jobId, request.assetId, stored);
    if (!job)
      throw new CairnError('cairn.sign.idempotency_conflict', `Asset id ${request.assetId} belongs to another sign.`);
    if (!job.created) return { jobId: job.row.jobId, status: job.row.status, replayed: true };
    await this.#runner.enqueue({ jobId, tenantId: request.tenantId });
    return { jobId, status: 'queued', replayed: false };
  }

  /** The tenant's job; not found when it has none by that id. */
  async job(tenantId: string, jobId: string): Promise<JobRow> {
    const job = isId('job', jobId) ? await this.deps.jobs.get(tenantId, jobId) : null;
    if (!job) throw new CairnError('cairn.not_found', `Job ${jobId} not found.`);
    return job;
  }

  run(item: SignJobItem, attempt: number, maxAttempts: number): Promise<void> {
    return this.#runner.run(item, attempt, maxAttempts);
  }

  private async sign({ item, input: request, doneIn, done }: JobRun<signerV1.SignRequest>): Promise<void> {
    // How far the run is, on the job row at most every 500 ms (GET /v1/jobs shows it); stopped before the job ends.
    const progress = new JobProgressWriter(
      (value) => this.deps.jobs.markProgress(item.tenantId, item.jobId, value),
      (error) => this.logger.warn({ err: error, job_id: item.jobId }, 'sign job progress not written'),
    );
    let result: SignResult;
    try {
      result = await signAsset(
        this.deps,
        request,
        async (tx, result) => {
          await progress.close();
          await doneIn(
            tx,
            result,
            newEvent(
              'job.completed',
              item.tenantId,
              jobCompletedData(
                item.jobId,
                request.recipe?.recipeId ?? '',
                result,
                request.reservationId,
                request.byokReservationId,
              ),
            ),
          );
        },
        progress.report,
      );
    } finally {
      await progress.close();
    }
    // A job whose asset id was already recorded by another sign (EnqueueSign dedupes by asset id, so only a caller
    // that also signed that id synchronously gets here): done with that answer, and its reservations named
    // nowhere, so the unit is billed once, by the sign that recorded it (this job's reservations lapse unbilled).
    if (result.replayed) {
      const { replayed: _replayed, ...stored } = result;
      await done(
        stored,
        newEvent(
          'job.completed',
          item.tenantId,
          jobCompletedData(item.jobId, request.recipe?.recipeId ?? '', result, ''),
        ),
      );
    }
  }
}
