// The signer's C2PA work runs in child processes under a time budget (docs/decisions/0025-c2pa-in-child-processes.md).
// Here the budget is 1 ms, so every sign overruns it: the child is killed each time, and what a client sees must stay
// one clean answer.
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type Bus, type RunningConsumer } from '@cairn/bus';
import { connectBus, collectEvents } from './support/events.js';
import { type AnyEvent } from '@cairn/events';
import { waitFor } from '@cairn/testing';
import { multipart, onboard, startStack, type Stack } from './support/stack.js';
import { toneWav } from './support/tone-wav.js';

let stack: Stack;
let tenant: { tenant_id: string; api_key: string };
let bus: Bus;
let observer: RunningConsumer;
const events: AnyEvent[] = [];

const SMALL = toneWav(1); // 32 KB: signed while the client waits
const LARGE = toneWav(4); // 128 KB: above SYNC_SIGN_MAX_BYTES, a job

function sign(bytes: Buffer, key = crypto.randomUUID()) {
  return stack.request('/v1/sign', {
    method: 'POST',
    key: tenant.api_key,
    headers: { 'idempotency-key': key },
    body: multipart({ recipe: 'audio-genai-v1' }, { field: 'asset', bytes, name: 'a.wav', type: 'audio/wav' }),
  });
}

beforeAll(async () => {
  // The watermark service too: audio-genai-v1 marks the audio before C2PA signs it.
  stack = await startStack(['watermark', 'signer', 'gateway'], {
    SIGN_WORKER_TIMEOUT_MS: '1',
    SYNC_SIGN_MAX_BYTES: String(64 * 1024),
    SIGN_JOB_MAX_ATTEMPTS: '3',
  });
  tenant = await onboard(stack);
  bus = await connectBus(stack.env);
  observer = await collectEvents(bus, 'isolation-observer', ['job.failed', 'job.completed'], events);
}, 120_000);

afterAll(async () => {
  await observer?.stop();
  await bus?.close();
  await stack?.stop();
});

describe('isolated C2PA signing', () => {
  it('a sign whose worker is killed answers one 503 cairn.sign.worker_failed, and the signer keeps serving', async () => {
    const res = await sign(SMALL);
    expect(res.status).toBe(503);
    expect(await res.json()).toMatchObject({ code: 'cairn.sign.worker_failed', status: 503 });
    // The same again: the signer process is up and answers the same way (not a refused connection).
    const again = await sign(SMALL);
    expect(again.status).toBe(503);
    expect(await again.json()).toMatchObject({ code: 'cairn.sign.worker_failed' });
  }, 60_000);

  it('a job that keeps failing ends failed after SIGN_JOB_MAX_ATTEMPTS, with a problem and one job.failed', async () => {
    const accepted = await sign(LARGE);
    expect(accepted.status).toBe(202);
    const { job_id: jobId } = (await accepted.json()) as { job_id: string };
    const failed = await waitFor(
      `job ${jobId} failed`,
      async () => {
        const job = (await (await stack.request(`/v1/jobs/${jobId}`, { key: tenant.api_key })).json()) as Record<
          string,
          unknown
        >;
        return job.status === 'failed' ? job : undefined;
      },
      60_000,
    );
    expect(failed).toMatchObject({ attempts: 3, problem: { code: 'cairn.sign.worker_failed', status: 503 } });
    await waitFor('job.failed', async () =>
      events.some((e) => e.type === 'job.failed' && e.data.job_id === jobId) ? true : undefined,
    );
    // Redeliveries are over (the queue gives one delivery past the budget, which only sees the job ended).
    const later = (await (await stack.request(`/v1/jobs/${jobId}`, { key: tenant.api_key })).json()) as Record<
      string,
      unknown
    >;
    expect(later).toMatchObject({ status: 'failed', attempts: 3 });
    expect(events.filter((e) => e.type === 'job.failed' && e.data.job_id === jobId)).toHaveLength(1);
    expect(events.some((e) => e.type === 'job.completed' && e.data.job_id === jobId)).toBe(false);
  }, 90_000);

  it('with a workable budget the restarted signer signs the same file', async () => {
    stack.env.SIGN_WORKER_TIMEOUT_MS = '60000';
    await stack.stopService('signer');
    await stack.restart('signer');
    const res = await sign(SMALL);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ asset_id: expect.stringMatching(/^a_/), media_type: 'audio/wav' });
  }, 60_000);
});
