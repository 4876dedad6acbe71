/**
 * A video above the synchronous limit is a sign job whose status shows how far it is. The job's progress
 * (GET /v1/jobs/{id}) rises from 0 to 1 while the frames are marked, and the job ends done with a file that verifies.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { clip } from './support/video.js';
import { onboard, startStack, type Stack, postSign } from './support/stack.js';
import { verifyFile } from './support/watermark-fleet.js';

const SYNC_MAX = 64 * 1024;
let stack: Stack;
let owner: { tenant_id: string; api_key: string };
let video: Buffer;

interface JobBody {
  job_id: string;
  status: string;
  progress?: { stage: string; fraction: number; updated_at: string };
  asset_id?: string;
  media_type?: string;
  problem?: unknown;
}

beforeAll(async () => {
  stack = await startStack(['watermark', 'signer', 'verifier', 'softbinding', 'gateway'], {
    SYNC_SIGN_MAX_BYTES: String(SYNC_MAX),
    PUBLIC_VERIFY_PER_MINUTE: '1000',
  });
  owner = await onboard(stack);
  // 10 s of 720p at 25 fps (250 frames, 5 MB): marking takes seconds (0.33 s per video second on the two idle cores
  // here, bench:watermark-video; several times that under load), many times the 500 ms between progress writes, so
  // polls every 100 ms see the frames go by.
  video = await clip('testsrc2', { seconds: 10, width: 1280, height: 720, audio: true });
  expect(video.length).toBeGreaterThan(SYNC_MAX);
}, 240_000);
afterAll(() => stack?.stop());

async function poll(jobId: string, key: string): Promise<{ status: number; body: JobBody }> {
  const res = await stack.request(`/v1/jobs/${jobId}`, { key });
  return { status: res.status, body: (await res.json()) as JobBody };
}

describe('a video sign job shows its progress (GET /v1/jobs/{id})', () => {
  it('202, then a fraction that rises while the frames are marked, then done with a file that verifies', async () => {
    const res = await postSign(stack, owner.api_key, { recipe: 'video-genai-v1', bytes: video, name: 'clip.mp4' });
    expect(res.status).toBe(202);
    const accepted = (await res.json()) as { job_id: string; poll_url: string };
    expect(accepted.poll_url).toBe(`${stack.baseUrl}/v1/jobs/${accepted.job_id}`);

    const seen: Array<NonNullable<JobBody['progress']>> = [];
    let job: JobBody = { job_id: accepted.job_id, status: 'queued' };
    let otherTenantAsked = false;
    const other = await onboard(stack);
    // Bounded by the test's own timeout, not by a clock here: the job ends done or failed.
    while (job.status !== 'done' && job.status !== 'failed') {
      const polled = await poll(accepted.job_id, owner.api_key);
      expect(polled.status).toBe(200);
      job = polled.body;
      expect(['queued', 'running', 'done', 'failed']).toContain(job.status);
      if (job.status === 'running' && job.progress) {
        seen.push(job.progress);
        // Another tenant never sees the job, progress or not.
        if (!otherTenantAsked && job.progress.stage === 'watermarking' && job.progress.fraction > 0) {
          otherTenantAsked = true;
          expect((await poll(accepted.job_id, other.api_key)).status).toBe(404);
        }
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(job).toMatchObject({
      status: 'done',
      asset_id: expect.stringMatching(/^a_/),
      media_type: 'video/mp4',
      progress: { stage: 'storing', fraction: 1 },
    });

    // Every reading is a known step and a fraction in 0..1 that never falls.
    for (const progress of seen) {
      expect(['reading', 'watermarking', 'signing', 'storing']).toContain(progress.stage);
      expect(progress.fraction).toBeGreaterThanOrEqual(0);
      expect(progress.fraction).toBeLessThanOrEqual(1);
      expect(Number.isNaN(Date.parse(progress.updated_at))).toBe(false);
    }
    const fractions = seen.map((p) => p.fraction);
    expect(fractions).toEqual([...fractions].sort((a, b) => a - b));
    // The marking was seen part way, not only its start and its end.
    expect(seen.some((p) => p.stage === 'watermarking' && p.fraction > 0 && p.fraction < 1)).toBe(true);
    expect(otherTenantAsked).toBe(true);

    const content = await stack.request(`/v1/assets/${job.asset_id}/content`, { key: owner.api_key });
    expect(content.status).toBe(200);
    const result = await verifyFile(stack, Buffer.from(await content.arrayBuffer()), 'clip.mp4');
    expect(result.status).toBe('verified_manifest_and_watermark_match');
  }, 300_000);
});
