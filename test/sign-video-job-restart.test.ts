/**
 * A video sign job survives a restart of the watermark service while its frames are marked (a rolling
 * restart of the watermark Deployment mid-job). The job ends done with a file that verifies, and the progress
 * GET /v1/jobs/{id} shows never falls; a watermark service that never comes back ends the job failed, with a problem
 * that says so, after its bounded attempts.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { clip } from './support/video.js';
import { onboard, startStack, type Stack, postSign } from './support/stack.js';
import { verifyFile } from './support/watermark-fleet.js';

const SYNC_MAX = 64 * 1024;
let stack: Stack;
let owner: { tenant_id: string; api_key: string };

interface JobBody {
  job_id: string;
  status: string;
  attempts?: number;
  progress?: { stage: string; fraction: number; updated_at: string };
  asset_id?: string;
  problem?: { code?: string; title?: string; status?: number; detail?: string };
}

beforeAll(async () => {
  stack = await startStack(['watermark', 'signer', 'verifier', 'softbinding', 'gateway'], {
    SYNC_SIGN_MAX_BYTES: String(SYNC_MAX),
    PUBLIC_VERIFY_PER_MINUTE: '1000',
    // Long enough for the in-process restart below (a second or two), short enough that the outage case ends soon.
    SIGN_JOB_WATERMARK_WAIT_MS: '10000',
    SIGN_JOB_MAX_ATTEMPTS: '2',
  });
  owner = await onboard(stack);
}, 240_000);
afterAll(() => stack?.stop());

async function startJob(video: Buffer): Promise<string> {
  const res = await postSign(stack, owner.api_key, { recipe: 'video-genai-v1', bytes: video, name: 'clip.mp4' });
  expect(res.status).toBe(202);
  return ((await res.json()) as { job_id: string }).job_id;
}

/** Polls the job every 100 ms until it ends, showing each reading to `onPoll`; answers every reading. */
async function pollUntilEnded(jobId: string, onPoll: (job: JobBody) => void = () => {}): Promise<JobBody[]> {
  const readings: JobBody[] = [];
  // Bounded by the test's own timeout, not by a clock here: the job ends done or failed.
  for (;;) {
    const res = await stack.request(`/v1/jobs/${jobId}`, { key: owner.api_key });
    expect(res.status).toBe(200);
    const job = (await res.json()) as JobBody;
    readings.push(job);
    onPoll(job);
    if (job.status === 'done' || job.status === 'failed') return readings;
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('a video sign job and a watermark service that goes away mid-job', () => {
  it('survives a restart of the watermark service while the frames are marked: done, progress never falls, verifies', async () => {
    // 6 s of 720p (150 frames): marking takes seconds, so the restart lands mid-marking.
    const video = await clip('testsrc2', { seconds: 6, width: 1280, height: 720, audio: true });
    expect(video.length).toBeGreaterThan(SYNC_MAX);
    const jobId = await startJob(video);

    let restarted: Promise<void> | undefined;
    let restartedAt = -1;
    const readings = await pollUntilEnded(jobId, (job) => {
      if (restarted || job.progress?.stage !== 'watermarking' || !(job.progress.fraction > 0)) return;
      restarted = (async () => {
        await stack.stopService('watermark');
        await stack.restart('watermark');
      })();
    });
    await restarted;
    expect(restarted).toBeDefined();
    restartedAt = readings.findIndex((j) => j.progress?.stage === 'watermarking' && j.progress.fraction > 0);

    const job = readings.at(-1)!;
    // Done in its first attempt: the marking was asked again of the restarted service, not the whole job run again.
    expect(job).toMatchObject({ status: 'done', attempts: 1, asset_id: expect.stringMatching(/^a_/) });
    // Once the job shows how far it is, every later reading does, and the fraction never falls, outage or not.
    const first = readings.findIndex((j) => j.progress);
    const shown = readings.slice(first);
    expect(shown.every((j) => j.progress)).toBe(true);
    const fractions = shown.map((j) => j.progress!.fraction);
    expect(fractions).toEqual([...fractions].sort((a, b) => a - b));
    // The restart really was mid-marking: the frames were still being marked after it began.
    expect(readings.slice(restartedAt + 1).some((j) => j.progress?.stage === 'watermarking')).toBe(true);

    const content = await stack.request(`/v1/assets/${job.asset_id}/content`, { key: owner.api_key });
    expect(content.status).toBe(200);
    const result = await verifyFile(stack, Buffer.from(await content.arrayBuffer()), 'clip.mp4');
    expect(result.status).toBe('verified_manifest_and_watermark_match');
  }, 180_000);

  it('ends failed with a problem naming the watermark service when it never comes back', async () => {
    const video = await clip('testsrc2', { seconds: 2, width: 640, height: 360, audio: false });
    expect(video.length).toBeGreaterThan(SYNC_MAX);
    await stack.stopService('watermark');
    try {
      const readings = await pollUntilEnded(await startJob(video));
      const job = readings.at(-1)!;
      expect(job.status).toBe('failed');
      expect(job.attempts).toBe(2);
      expect(job.problem).toMatchObject({
        code: 'cairn.unavailable',
        status: 503,
        title: expect.any(String),
        detail: expect.stringMatching(/watermark service/),
      });
    } finally {
      await stack.restart('watermark');
    }
  }, 120_000);
});
