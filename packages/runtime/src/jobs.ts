import type { WorkQueue } from '@cairn/bus';
import { withTenant, type Database, type Tx } from '@cairn/db';
import { asCairnError, CairnError, toJobProblem, type ErrorCode, type JobProblem } from '@cairn/errors';
import type { AnyEvent } from '@cairn/events';
import type { Logger } from '@cairn/logging';
import type { Outbox } from './outbox.js';
import { unqueued } from './unqueued.js';

/** What the work queue carries: "run job X" of a tenant. The job's row holds everything else. */
export interface JobItem {
  jobId: string;
  tenantId: string;
}

export type JobStatus = 'queued' | 'running' | 'done' | 'failed';

/** What a run writes on a job's row: an attempt starts, or the job ends. */
export type JobMark =
  | { status: 'running'; attempts: number }
  | { status: 'done'; result: unknown }
  | { status: 'failed'; problem: JobProblem };

/** A service's job rows, each under its tenant (JobRows of @cairn/db over the service's table). */
export interface JobRecords<Row extends { status: JobStatus }> {
  get(tenantId: string, jobId: string): Promise<Row | null>;
  /** Removes a job nobody was told about (its queue item was refused), while it is still only queued. */
  deleteQueued(tenantId: string, jobId: string): Promise<void>;
  mark(tx: Tx, jobId: string, fields: JobMark): Promise<void>;
}

/** Failures worth another attempt of any job: a peer or this service was briefly away. */
export const TRANSIENT_JOB_ERRORS: ReadonlySet<ErrorCode> = new Set(['cairn.unavailable', 'cairn.internal_error']);

/** One run of a job, as its work sees it. */
export interface JobRun<Input> {
  readonly item: JobItem;
  readonly input: Input;
  /**
   * Ends the job done, with the event that tells it, in the caller's transaction: the one that commits what the
   * work made, so a job is done exactly when its work is recorded. The caller flushes the outbox after its commit.
   */
  readonly doneIn: (tx: Tx, result: unknown, event: AnyEvent) => Promise<void>;
  /** Ends the job done, with the event that tells it, in a transaction of its own. */
  readonly done: (result: unknown, event: AnyEvent) => Promise<void>;
}

/** What one kind of job is: its rows, its input, its work and how it tells its failure. */
export interface JobKind<Row extends { status: JobStatus }, Input> {
  /** The work's name in log lines and problems ('sign', 'verify'). */
  what: string;
  records: JobRecords<Row>;
  /** Error codes worth another attempt, while attempts remain; anything else ends the job failed. */
  transient: ReadonlySet<ErrorCode>;
  /** The code of a job whose every attempt ended without an answer (the process itself died on it). */
  exhaustedCode: ErrorCode;
  /** The job's input, read from its row. */
  input(row: Row): Input;
  /** The upload the job reads: its input until the job ends, deleted then, either way. */
  uploadKey(input: Input): string;
  /** The event that tells the job failed (job.failed), with its problem; the service's own, as it publishes it. */
  failedEvent(item: JobItem, input: Input, problem: JobProblem): AnyEvent;
  /** Does the job and ends it done (JobRun.doneIn or done), or throws. */
  work(run: JobRun<Input>): Promise<void>;
}

export interface JobRunnerDeps {
  db: Database;
  outbox: Pick<Outbox, 'enqueue' | 'flush'>;
  blobs: { delete(key: string): Promise<void> };
  logger: Logger;
  queue: WorkQueue<JobItem>;
}

/**
 * Asynchronous jobs. The job row is the truth about a job; the work queue carries only "run job X", so a process
 * that dies mid-job leaves the item unacknowledged and the next delivery runs it again, and a job already done or
 * failed is skipped. A job ends done or failed with the event that tells it in one transaction, so whatever
 * settles on those events (billing) settles exactly the jobs that ended; its upload is deleted either way.
 */
export class JobRunner<Row extends { status: JobStatus }, Input> {
  constructor(
    private readonly deps: JobRunnerDeps,
    private readonly kind: JobKind<Row, Input>,
  ) {}

  /** Queues the job whose row was just created; when the queue refuses it, the row goes and 503 is thrown. */
  async enqueue(item: JobItem): Promise<void> {
    try {
      await this.deps.queue.enqueue(item, item.jobId);
    } catch (error) {
      // Without its row gone, a retry would find the job, answer it and queue nothing: a job `queued` forever.
      // Gone, the retry creates and queues it afresh.
      throw await unqueued(
        this.kind.what,
        error,
        () => this.kind.records.deleteQueued(item.tenantId, item.jobId),
        this.deps.logger,
      );
    }
  }

  /**
   * One delivery of the job. The work queue delivers once more than maxAttempts (service.ts): a delivery past the
   * budget means every attempt ended without an answer, so the job ends there, not `running` forever.
   */
  async run(item: JobItem, attempt: number, maxAttempts: number): Promise<void> {
    const { kind } = this;
    const row = await kind.records.get(item.tenantId, item.jobId);
    if (!row || row.status === 'done' || row.status === 'failed') return;
    const input = kind.input(row);
    // Best effort: the job's outcome is recorded either way; a failed delete leaves an unreferenced upload blob.
    const finished = () => this.deps.blobs.delete(kind.uploadKey(input)).catch(() => undefined);
    if (attempt > maxAttempts) {
      await this.fail(
        item,
        input,
        new CairnError(kind.exhaustedCode, `The ${kind.what} was attempted ${maxAttempts} times and never finished.`),
      );
      await finished();
      return;
    }
    await withTenant(this.deps.db, item.tenantId, (tx) =>
      kind.records.mark(tx, item.jobId, { status: 'running', attempts: attempt }),
    );
    try {
      await kind.work({
        item,
        input,
        doneIn: (tx, result, event) => this.endIn(tx, item, { status: 'done', result }, event),
        done: (result, event) => this.end(item, { status: 'done', result }, event),
      });
      await finished();
    } catch (error) {
      const known = asCairnError(error, `The ${kind.what} failed unexpectedly.`);
      if (kind.transient.has(known.code) && attempt < maxAttempts) throw error;
      this.deps.logger.warn({ err: error, job_id: item.jobId, code: known.code }, `${kind.what} job failed`);
      await this.fail(item, input, known);
      await finished();
    }
  }

  /** Ends the job `failed` with its problem and job.failed, once (the row's status decides). */
  private async fail(item: JobItem, input: Input, known: CairnError): Promise<void> {
    const problem = toJobProblem(known);
    await this.end(item, { status: 'failed', problem }, this.kind.failedEvent(item, input, problem));
  }

  private async end(item: JobItem, fields: JobMark, event: AnyEvent): Promise<void> {
    await withTenant(this.deps.db, item.tenantId, (tx) => this.endIn(tx, item, fields, event));
    void this.deps.outbox.flush();
  }

  private async endIn(tx: Tx, item: JobItem, fields: JobMark, event: AnyEvent): Promise<void> {
    await this.kind.records.mark(tx, item.jobId, fields);
    await this.deps.outbox.enqueue(tx, event);
  }
}
