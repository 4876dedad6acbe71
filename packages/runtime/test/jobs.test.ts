import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdir, mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { sql } from 'drizzle-orm';
import { integer, jsonb, pgSchema, text, timestamp } from 'drizzle-orm/pg-core';
import { WorkQueue } from '@cairn/bus';
import { JobRows } from '@cairn/db';
import { CairnError, isCairnError, type JobProblem } from '@cairn/errors';
import { newEvent } from '@cairn/events';
import { createSandbox, sampleEvent, waitFor, writeMigrations, type Sandbox } from '@cairn/testing';
import { FilesystemBlobStore } from '../../blob/src/index.js';
import {
  JobRunner,
  TRANSIENT_JOB_ERRORS,
  type JobItem,
  type JobRun,
  startService,
  type RunningService,
} from '../src/index.js';
import { outboxTablesSql } from './service-tables.js';

// A job table with what the runner reads and writes (JobTable of @cairn/db, an upload, the result, problem and
// attempts), under the schema of the service the test starts (its outbox lives there too).
const jobs = pgSchema('webhook').table('jobs', {
  jobId: text('job_id').primaryKey(),
  tenantId: text('tenant_id').notNull(),
  status: text('status').$type<'queued' | 'running' | 'done' | 'failed'>().notNull(),
  uploadBlobKey: text('upload_blob_key').notNull(),
  result: jsonb('result'),
  problem: jsonb('problem'),
  attempts: integer('attempts').notNull().default(0),
  updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
});
type Row = typeof jobs.$inferSelect;

const TENANT = 't_jobrunner';
let sandbox: Sandbox;
let service: RunningService;
let rows: JobRows<typeof jobs>;
let blobDir: string;
let blobs: FilesystemBlobStore;
let queue: WorkQueue<JobItem>;
let seq = 0;
/** What the test's work does on its next run of a job, by job id; a job without one is done with `{ ok: true }`. */
const behaviour = new Map<string, (run: JobRun<Row>) => Promise<void>>();
const worked: string[] = [];

beforeAll(async () => {
  sandbox = await createSandbox();
  const migrations = await writeMigrations([
    outboxTablesSql('webhook') +
      '--> statement-breakpoint\n' +
      'CREATE TABLE "webhook"."jobs" ("job_id" text PRIMARY KEY, "tenant_id" text NOT NULL, "status" text NOT NULL, ' +
      '"upload_blob_key" text NOT NULL, "result" jsonb, "problem" jsonb, "attempts" integer DEFAULT 0 NOT NULL, ' +
      '"updated_at" timestamptz DEFAULT now() NOT NULL);\n',
  ]);
  service = await startService({
    name: 'webhook',
    configShape: {},
    migrationsFolder: migrations,
    env: sandbox.env,
    register: async () => undefined,
  });
  rows = new JobRows(service.context.db, jobs);
  blobDir = await mkdtemp(join(tmpdir(), 'cairn-jobs-'));
  blobs = new FilesystemBlobStore(blobDir);
  queue = await WorkQueue.open<JobItem>(service.context.bus, `jobrunner${Date.now()}`);
}, 60_000);

afterAll(async () => {
  await service?.stop();
  await sandbox?.dispose();
  if (blobDir) await rm(blobDir, { recursive: true, force: true });
});

function runner(): JobRunner<Row, Row> {
  const { db, outbox, logger } = service.context;
  return new JobRunner(
    { db, outbox, blobs, logger, queue },
    {
      what: 'test',
      records: rows,
      transient: TRANSIENT_JOB_ERRORS,
      exhaustedCode: 'cairn.unavailable',
      input: (row) => row,
      uploadKey: (row) => row.uploadBlobKey,
      failedEvent: (item, row, problem) =>
        newEvent('job.failed', item.tenantId, { job_id: item.jobId, reservation_id: row.jobId, problem }),
      work: async (run) => {
        worked.push(run.item.jobId);
        const work = behaviour.get(run.item.jobId);
        if (work) return work(run);
        await run.done({ ok: true }, completed(run.item));
      },
    },
  );
}

function completed(item: JobItem) {
  return sampleEvent('verification.completed', item.tenantId, { job_id: item.jobId });
}

/** A queued job whose upload is on disk, as an enqueue leaves it. */
async function queuedJob(): Promise<JobItem & { uploadBlobKey: string }> {
  seq += 1;
  const jobId = `job_runner${Date.now()}x${seq}`;
  const uploadBlobKey = `${TENANT}/uploads/${jobId}`;
  await mkdir(dirname(join(blobDir, uploadBlobKey)), { recursive: true });
  await writeFile(join(blobDir, uploadBlobKey), 'upload');
  await service.context.db.insert(jobs).values({ jobId, tenantId: TENANT, status: 'queued', uploadBlobKey });
  return { jobId, tenantId: TENANT, uploadBlobKey };
}

const exists = (key: string) =>
  stat(join(blobDir, key)).then(
    () => true,
    () => false,
  );

/** The job's events in the outbox, by type. */
async function eventsOf(jobId: string): Promise<Array<{ type: string; data: Record<string, unknown> }>> {
  const result = await service.context.db.execute<{ envelope: { type: string; data: Record<string, unknown> } }>(
    sql`select envelope from webhook.outbox where envelope->'data'->>'job_id' = ${jobId} order by seq`,
  );
  return result.rows.map((r) => r.envelope);
}

describe('JobRunner: one lifecycle for every asynchronous job', () => {
  it('runs a queued job off the work queue: running with its attempt, then done with its event, its upload deleted', async () => {
    const job = await queuedJob();
    const jobRunner = runner();
    const worker = await queue.consume({
      durable: `jobrunner-${seq}`,
      maxAttempts: 3,
      handler: (item, ctx) => jobRunner.run(item, ctx.attempt, 2),
    });
    try {
      await jobRunner.enqueue(job);
      await waitFor('the job done', async () => (await rows.get(TENANT, job.jobId))?.status === 'done', 30_000);
    } finally {
      await worker.stop(1000);
    }
    const row = await rows.get(TENANT, job.jobId);
    expect(row).toMatchObject({ status: 'done', attempts: 1, result: { ok: true }, problem: null });
    expect((await eventsOf(job.jobId)).map((e) => e.type)).toEqual(['verification.completed']);
    expect(await exists(job.uploadBlobKey)).toBe(false);
  }, 60_000);

  it('skips a job already done or failed: its work is not run again and nothing more is written', async () => {
    const job = await queuedJob();
    await runner().run(job, 1, 2);
    const before = await rows.get(TENANT, job.jobId);
    await runner().run(job, 2, 2);
    expect(worked.filter((id) => id === job.jobId)).toHaveLength(1);
    expect(await rows.get(TENANT, job.jobId)).toEqual(before);
    expect(await eventsOf(job.jobId)).toHaveLength(1);
  });

  it('ends the job done in the work’s own transaction when the work commits it there', async () => {
    const job = await queuedJob();
    behaviour.set(job.jobId, (run) =>
      service.context.db.transaction((tx) => run.doneIn(tx, { inTx: true }, completed(run.item))),
    );
    await runner().run(job, 1, 2);
    expect(await rows.get(TENANT, job.jobId)).toMatchObject({ status: 'done', result: { inTx: true } });
    expect((await eventsOf(job.jobId)).map((e) => e.type)).toEqual(['verification.completed']);
  });

  it('rethrows a transient failure while attempts remain, keeping the upload; the last attempt ends it failed', async () => {
    const job = await queuedJob();
    behaviour.set(job.jobId, () => Promise.reject(new CairnError('cairn.unavailable', 'a peer is away')));
    const first = await runner()
      .run(job, 1, 2)
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(isCairnError(first) && first.code).toBe('cairn.unavailable');
    expect(await rows.get(TENANT, job.jobId)).toMatchObject({ status: 'running', attempts: 1 });
    expect(await exists(job.uploadBlobKey)).toBe(true);
    expect(await eventsOf(job.jobId)).toEqual([]);

    await runner().run(job, 2, 2);
    const row = await rows.get(TENANT, job.jobId);
    expect(row).toMatchObject({ status: 'failed', attempts: 2 });
    expect((row?.problem as JobProblem).code).toBe('cairn.unavailable');
    const events = await eventsOf(job.jobId);
    expect(events.map((e) => e.type)).toEqual(['job.failed']);
    expect(events[0]?.data).toMatchObject({ reservation_id: job.jobId, problem: { code: 'cairn.unavailable' } });
    expect(await exists(job.uploadBlobKey)).toBe(false);
  });

  it('ends a job failed at once on a failure no retry mends, with its problem', async () => {
    const job = await queuedJob();
    behaviour.set(job.jobId, () =>
      Promise.reject(new CairnError('cairn.validation.invalid_body', 'not a file this job reads')),
    );
    await runner().run(job, 1, 3);
    const row = await rows.get(TENANT, job.jobId);
    expect(row).toMatchObject({ status: 'failed', attempts: 1 });
    expect(row?.problem).toMatchObject({ code: 'cairn.validation.invalid_body', detail: 'not a file this job reads' });
    expect((await eventsOf(job.jobId)).map((e) => e.type)).toEqual(['job.failed']);
    expect(await exists(job.uploadBlobKey)).toBe(false);
  });

  it('ends a job failed on the delivery past its budget without running it (every attempt died unanswered)', async () => {
    const job = await queuedJob();
    await runner().run(job, 3, 2);
    expect(worked).not.toContain(job.jobId);
    const row = await rows.get(TENANT, job.jobId);
    expect(row?.status).toBe('failed');
    expect(row?.problem).toMatchObject({
      code: 'cairn.unavailable',
      detail: 'The test was attempted 2 times and never finished.',
    });
    expect((await eventsOf(job.jobId)).map((e) => e.type)).toEqual(['job.failed']);
    expect(await exists(job.uploadBlobKey)).toBe(false);
  });

  it('removes the row of a job the queue refused and answers 503, so a retry creates and queues it afresh', async () => {
    const job = await queuedJob();
    const refusing = await WorkQueue.open<JobItem>(service.context.bus, `jobrunnergone${Date.now()}`);
    // JetStream without the queue's stream: the publish is not stored.
    await service.context.bus.jsm.streams.delete(refusing.stream);
    const { db, outbox, logger } = service.context;
    const refused = await new JobRunner(
      { db, outbox, blobs, logger, queue: refusing },
      {
        what: 'test',
        records: rows,
        transient: TRANSIENT_JOB_ERRORS,
        exhaustedCode: 'cairn.unavailable',
        input: (row: Row) => row,
        uploadKey: (row) => row.uploadBlobKey,
        failedEvent: () => {
          throw new Error('a refused job never fails');
        },
        work: () => Promise.reject(new Error('a refused job never runs')),
      },
    )
      .enqueue(job)
      .then(
        () => undefined,
        (error: unknown) => error,
      );
    expect(isCairnError(refused) && refused.code).toBe('cairn.unavailable');
    expect(await rows.get(TENANT, job.jobId)).toBeNull();
  }, 30_000);
});
