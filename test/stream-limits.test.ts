/**
 * NATS_STREAM_MAX_BYTES through the fleet: the services create their streams with it, and an asynchronous sign
 * whose work queue is full answers 503 cairn.unavailable with nothing queued or billed, and the same request
 * retried once there is room is signed, once.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import sharp from 'sharp';
import { type Bus } from '@cairn/bus';
import { connectBus } from './support/events.js';
import { waitFor } from '@cairn/testing';
import { multipart, onboard, startStack, type Stack } from './support/stack.js';
import { settledUsage } from './support/usage.js';

const LIMIT = 8 * 1024 ** 2;
let stack: Stack;
let tenant: { tenant_id: string; api_key: string };
// Joins the stack's stream without limits of its own: it reads and changes the streams as an operator would.
let bus: Bus;
let photo: Buffer;

beforeAll(async () => {
  stack = await startStack(['watermark', 'signer', 'gateway'], {
    NATS_STREAM_MAX_BYTES: String(LIMIT),
    // Every sign becomes a job: the work queue is on the path.
    SYNC_SIGN_MAX_BYTES: '1',
  });
  tenant = await onboard(stack);
  bus = await connectBus(stack.env);
  photo = await sharp({
    create: {
      width: 400,
      height: 300,
      channels: 3,
      background: '#808080',
      noise: { type: 'gaussian', mean: 128, sigma: 40 },
    },
  })
    .jpeg()
    .toBuffer();
}, 120_000);

afterAll(async () => {
  await bus?.close();
  await stack?.stop();
});

const signQueue = () => `${String(stack.env.NATS_STREAM)}_WORK_SIGN`;

function sign(idempotencyKey: string) {
  return stack.request('/v1/sign', {
    method: 'POST',
    key: tenant.api_key,
    headers: { 'idempotency-key': idempotencyKey },
    body: multipart({ recipe: 'image-genai-v1' }, { field: 'asset', bytes: photo, name: 'p.jpg' }),
  });
}

describe('stream limits in the fleet', () => {
  it('the services create the event stream and the sign work queue with NATS_STREAM_MAX_BYTES', async () => {
    expect((await bus.jsm.streams.info(String(stack.env.NATS_STREAM))).config).toMatchObject({
      max_bytes: LIMIT,
      discard: 'old',
    });
    expect((await bus.jsm.streams.info(signQueue())).config).toMatchObject({
      max_bytes: LIMIT,
      discard: 'new',
    });
  });

  it('a sign whose queue is full answers 503 and loses nothing: its retry, once there is room, is signed', async () => {
    // The queue full: room for no item at all (the signer keeps the stream as it found it until it restarts).
    await bus.jsm.streams.update(signQueue(), { max_bytes: 16 });
    const key = crypto.randomUUID();
    const refused = await sign(key);
    expect(refused.status).toBe(503);
    const problem = (await refused.json()) as { code: string; detail: string };
    expect(problem.code).toBe('cairn.unavailable');
    expect(problem.detail).toMatch(/sign queue is full; nothing was queued/);
    expect((await bus.jsm.streams.info(signQueue())).state.messages).toBe(0);

    await bus.jsm.streams.update(signQueue(), { max_bytes: LIMIT });
    const accepted = await sign(key);
    expect(accepted.status).toBe(202);
    const { job_id: jobId } = (await accepted.json()) as { job_id: string };
    const done = await waitFor(
      `job ${jobId}`,
      async () => {
        const job = (await (await stack.request(`/v1/jobs/${jobId}`, { key: tenant.api_key })).json()) as {
          status: string;
          asset_id?: string;
        };
        return job.status === 'done' || job.status === 'failed' ? job : undefined;
      },
      60_000,
    );
    expect(done).toMatchObject({ status: 'done', asset_id: expect.stringMatching(/^a_/) });
    // Billed once: the refused attempt's reservation was released, the retry's committed.
    const usage = await settledUsage(stack, tenant.api_key);
    expect(usage.meters.image_sign?.used).toBe(1);
  }, 120_000);
});
