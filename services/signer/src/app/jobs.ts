import { create, fromJson, toJson, type JsonValue } from '@bufbuild/protobuf';
import { z } from 'zod';
import { type WorkQueue } from '@cairn/bus';
import { newEvent, type EventDataInput } from '@cairn/events';
import { withTenant } from '@cairn/db';
import { asCairnError, CairnError, toJobProblem } from '@cairn/errors';
import { unqueued } from '@cairn/runtime';
import { newId } from '@cairn/ids';
import type { Logger } from '@cairn/logging';
import { anchorBatchStates, signerV1, type AnchorBatchStateName } from '@cairn/proto';
import { parseSignMetadata } from '../domain/metadata.js';
import type { StoredJobProgress } from '../db/assets-schema.js';
import type { JobRow } from './ports.js';
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

export interface SignJobItem {
  jobId: string;
  tenantId: string;
}

/** Failures worth another attempt: the key service or a peer was briefly away, or the C2PA worker died on it. */
const TRANSIENT = new Set([
  'cairn.signer.unavailable',
  'cairn.unavailable',
  'cairn.internal_error',
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
 * Asynchronous signs: the job row is the source of truth for its status; the work queue only carries
 * "run job X". A signer that dies mid-job leaves the item unacknowledged, and another (or the restarted
 * one) runs it again; a job already done or failed is skipped.
 */
export class SignJobs {
  constructor(
    private readonly deps: PipelineDeps,
    private readonly queue: WorkQueue<SignJobItem>,
    private readonly logger: Logger,
  ) {}

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
    const job = await this.deps.store.createJob(request.tenantId, jobId, request.assetId, stored);
    if (!job)
      throw new CairnError('cairn.sign.idempotency_conflict', `Asset id ${request.assetId} belongs to another sign.`);
    if (!job.created) return { jobId: job.row.jobId, status: job.row.status, replayed: true };
    try {
      await this.queue.enqueue({ jobId, tenantId: request.tenantId }, jobId);
    } catch (error) {
      // Without its row gone, a retry of this asset id would find the job, answer it as replayed and queue nothing:
      // a job `queued` forever. Gone, the retry creates and queues it afresh.
      throw await unqueued('sign', error, () => this.deps.store.deleteQueuedJob(request.tenantId, jobId), this.logger);
    }
    return { jobId, status: 'queued', replayed: false };
  }

  async run(item: SignJobItem, attempt: number, maxAttempts: number): Promise<void> {
    const job = await this.deps.store.getJob(item.tenantId, item.jobId);
    if (!job || job.status === 'done' || job.status === 'failed') return;
    // The work queue delivers once more than maxAttempts (service.ts): a delivery past the budget means every
    // attempt ended without an answer (the signer process itself died on it), so the job ends here, not `running` forever.
    if (attempt > maxAttempts) {
      const request = fromJson(signerV1.SignRequestSchema, job.request as JsonValue);
      await this.fail(
        item,
        request,
        new CairnError('cairn.sign.worker_failed', `The sign was attempted ${maxAttempts} times and never finished.`),
      );
      // Best effort: the job is failed either way; a failed delete leaves an unreferenced upload blob behind.
      await this.deps.blobs.delete(request.uploadBlobKey).catch(() => undefined);
      return;
    }
    await withTenant(this.deps.db, item.tenantId, (tx) =>
      // The progress an earlier attempt reached stays: what GET /v1/jobs shows never falls (markJobProgress).
      this.deps.store.markJob(tx, item.jobId, { status: 'running', attempts: attempt }),
    );
    const request = fromJson(signerV1.SignRequestSchema, job.request as JsonValue);
    // The upload is the job's input until the job ends, either way.
    const finished = () => this.deps.blobs.delete(request.uploadBlobKey).catch(() => undefined);
    // How far the run is, on the job row at most every 500 ms (GET /v1/jobs shows it); stopped before the job ends.
    const progress = new JobProgressWriter(
      (value) => this.deps.store.markJobProgress(item.tenantId, item.jobId, value),
      (error) => this.logger.warn({ err: error, job_id: item.jobId }, 'sign job progress not written'),
    );
    try {
      const result = await signAsset(
        this.deps,
        request,
        async (tx, result) => {
          await progress.close();
          await this.deps.store.markJob(tx, item.jobId, {
            status: 'done',
            result,
            progress: finalProgress(),
          });
          await this.deps.outbox.enqueue(
            tx,
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
      await progress.close();
      if (result.replayed) await this.completeReplayed(item, request, result);
      await finished();
    } catch (error) {
      await progress.close();
      const known = asCairnError(error, 'The sign failed unexpectedly.');
      if (TRANSIENT.has(known.code) && attempt < maxAttempts) throw error;
      this.logger.warn({ err: error, job_id: item.jobId, code: known.code }, 'sign job failed');
      await this.fail(item, request, known);
      await finished();
    }
  }

  /**
   * A job whose asset id was already recorded by another sign (EnqueueSign dedupes by asset id, so only a caller
   * that also signed that id synchronously gets here): done with that answer, and its reservations named nowhere,
   * so the unit is billed once, by the sign that recorded it (this job's reservations lapse unbilled).
   */
  private async completeReplayed(item: SignJobItem, request: signerV1.SignRequest, result: SignResult): Promise<void> {
    const { replayed: _replayed, ...stored } = result;
    await withTenant(this.deps.db, item.tenantId, async (tx) => {
      await this.deps.store.markJob(tx, item.jobId, { status: 'done', result: stored, progress: finalProgress() });
      await this.deps.outbox.enqueue(
        tx,
        newEvent(
          'job.completed',
          item.tenantId,
          jobCompletedData(item.jobId, request.recipe?.recipeId ?? '', result, ''),
        ),
      );
    });
    void this.deps.outbox.flush();
  }

  /** Ends the job `failed` with its problem and job.failed, once (the row's status decides). */
  private async fail(item: SignJobItem, request: signerV1.SignRequest, known: CairnError): Promise<void> {
    const problem = toJobProblem(known);
    await withTenant(this.deps.db, item.tenantId, async (tx) => {
      await this.deps.store.markJob(tx, item.jobId, { status: 'failed', problem });
      await this.deps.outbox.enqueue(
        tx,
        newEvent('job.failed', item.tenantId, {
          job_id: item.jobId,
          reservation_id: request.reservationId || null,
          ...(request.byokReservationId ? { byok_reservation_id: request.byokReservationId } : {}),
          recipe_id: request.recipe?.recipeId ?? null,
          problem,
        }),
      );
    });
    void this.deps.outbox.flush();
  }
}
