import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { readdir } from 'node:fs/promises';
import sharp from 'sharp';
import { type Bus } from '@cairn/bus';
import { connectBus, collectEvents } from './support/events.js';
import { type AnyEvent } from '@cairn/events';
import { newId } from '@cairn/ids';
import { verifierV1 } from '@cairn/proto';
import { waitFor } from '@cairn/testing';
import { multipart, onboard, signAndFetch, startStack, type Stack } from './support/stack.js';
import { SHARED_DIR } from '../packages/testing/src/shared.js';

// An authenticated verify of a large file (or one sent with Prefer: respond-async) answers 202 with
// a job whose result is the Verification result; verification.completed is emitted; the public verify stays
// synchronous with its own size limit.

const PUBLIC_MAX = 200_000;
let stack: Stack;
let tenant: { tenant_id: string; api_key: string };
let signedBytes: Buffer;
let bus: Bus;
let observer: { stop(): Promise<void> };
const events: AnyEvent[] = [];

beforeAll(async () => {
  stack = await startStack(['watermark', 'signer', 'verifier', 'gateway'], {
    PUBLIC_VERIFY_PER_MINUTE: '1000',
    SYNC_VERIFY_MAX_BYTES: '150000',
    PUBLIC_VERIFY_MAX_BYTES: String(PUBLIC_MAX),
  });
  tenant = await onboard(stack);
  // About 300 KB: above the synchronous limit, and above the public one.
  const photo = await sharp(await readFile(`${SHARED_DIR}/fixtures/photos/astronaut.png`))
    .resize(1024, 1024)
    .jpeg({ quality: 97 })
    .toBuffer();
  ({ signedBytes } = await signAndFetch(stack, tenant.api_key, {
    recipe: 'image-genai-v1',
    bytes: photo,
    name: 'p.jpg',
  }));
  bus = await connectBus(stack.env);
  observer = await collectEvents(bus, 'test-verify-jobs', ['verification.completed', 'job.failed'], events);
}, 120_000);
afterAll(async () => {
  await observer?.stop();
  await bus?.close();
  await stack?.stop();
});

const verifyWithKey = (bytes: Buffer, headers: Record<string, string> = {}, key = tenant.api_key) =>
  stack.request('/v1/verify', {
    method: 'POST',
    key,
    headers,
    body: multipart({}, { field: 'file', bytes, name: 'f.jpg' }),
  });
const job = async (jobId: string, key = tenant.api_key) => stack.request(`/v1/jobs/${jobId}`, { key });
const finished = (jobId: string, key = tenant.api_key) =>
  waitFor(
    'the verify job',
    async () => {
      const body = (await (await job(jobId, key)).json()) as Record<string, unknown>;
      return body.status === 'done' || body.status === 'failed' ? body : undefined;
    },
    30_000,
    100,
  );
const used = async (meter: string, key = tenant.api_key) =>
  (
    (await (await stack.request('/v1/usage', { key })).json()) as {
      meters: Record<string, { used: number }>;
    }
  ).meters[meter]?.used ?? 0;
const uploadsLeft = async () =>
  readdir(join(fileURLToPath(String(stack.env.BLOB_STORE_URL)), 'public', 'uploads')).catch(() => [] as string[]);

describe('asynchronous verify', () => {
  it('a file above the synchronous limit: 202 with a job whose result is the Verification result, metered once, upload deleted', async () => {
    expect(signedBytes.length).toBeGreaterThan(150_000);
    const before = await used('image_verify');
    const res = await verifyWithKey(signedBytes);
    expect(res.status).toBe(202);
    const accepted = (await res.json()) as { job_id: string; poll_url: string };
    expect(accepted.poll_url).toBe(`${stack.baseUrl}/v1/jobs/${accepted.job_id}`);
    expect(res.headers.get('location')).toBe(accepted.poll_url);
    const done = await finished(accepted.job_id);
    expect(done).toMatchObject({ job_id: accepted.job_id, kind: 'verify', status: 'done' });
    expect(done.result).toMatchObject({
      status: 'verified_manifest_and_watermark_match',
      signals: { c2pa_signature_valid: true, signer_trusted: true },
    });
    const completed = await waitFor('verification.completed', () =>
      events.find((e) => e.type === 'verification.completed' && e.data.job_id === accepted.job_id),
    );
    expect(completed.tenant_id).toBe(tenant.tenant_id);
    expect(completed.data).toMatchObject({ status: 'verified_manifest_and_watermark_match', media_type: 'image' });
    await waitFor('the reservation to be committed', async () =>
      (await used('image_verify')) === before + 1 ? true : undefined,
    );
    expect(await uploadsLeft()).toEqual([]);
  }, 60_000);

  it('Prefer: respond-async makes a small file a job too, and says so', async () => {
    const small = await sharp(signedBytes).resize(300).jpeg().toBuffer();
    const res = await verifyWithKey(small, { prefer: 'respond-async' });
    expect(res.status).toBe(202);
    expect(res.headers.get('preference-applied')).toBe('respond-async');
    const { job_id } = (await res.json()) as { job_id: string };
    expect((await finished(job_id)).status).toBe('done');
  }, 60_000);

  it('a job that cannot verify its file ends failed with its problem and job.failed, and bills nothing', async () => {
    // A tenant of its own: the earlier tests' jobs may still be committing their units to the shared one.
    const own = await onboard(stack);
    const before = await used('image_verify', own.api_key);
    // Bytes of no type Cairn reads (not even text: invalid UTF-8).
    const res = await verifyWithKey(
      Buffer.alloc(4096, Buffer.from([0x00, 0xff, 0xfe, 0x81])),
      { prefer: 'respond-async' },
      own.api_key,
    );
    expect(res.status).toBe(202);
    const { job_id } = (await res.json()) as { job_id: string };
    const failed = await finished(job_id, own.api_key);
    expect(failed).toMatchObject({ status: 'failed', problem: { code: 'cairn.verify.unsupported_file_type' } });
    await waitFor('job.failed', () => events.find((e) => e.type === 'job.failed' && e.data.job_id === job_id));
    expect(await used('image_verify', own.api_key)).toBe(before);
  }, 60_000);

  it('another tenant cannot see the job', async () => {
    const res = await verifyWithKey(signedBytes, { prefer: 'respond-async' });
    const { job_id } = (await res.json()) as { job_id: string };
    const other = await onboard(stack);
    const refused = await job(job_id, other.api_key);
    expect(refused.status).toBe(404);
    expect(await refused.json()).toMatchObject({ code: 'cairn.not_found' });
    // The verifier itself says NOT_FOUND (as the signer's GetJob does), for another tenant's job and an unknown id.
    const verifier = stack.services.get('gateway')!.context.client(verifierV1.VerifierService, 'verifier');
    for (const [tenantId, jobId] of [
      [other.tenant_id, job_id],
      [tenant.tenant_id, newId('job')],
    ])
      await expect(verifier.getVerifyJob({ tenantId, jobId })).rejects.toMatchObject({ code: 'cairn.not_found' });
  }, 60_000);

  it('the public verify stays synchronous and takes files up to PUBLIC_VERIFY_MAX_BYTES', async () => {
    const tooBig = await stack.request('/v1/verify', {
      method: 'POST',
      body: multipart({}, { field: 'file', bytes: signedBytes, name: 'f.jpg' }),
    });
    expect(signedBytes.length).toBeGreaterThan(PUBLIC_MAX);
    expect(tooBig.status).toBe(413);
    const small = await sharp(signedBytes).resize(300).jpeg().toBuffer();
    const ok = await stack.request('/v1/verify', {
      method: 'POST',
      headers: { prefer: 'respond-async' },
      body: multipart({}, { field: 'file', bytes: small, name: 'f.jpg' }),
    });
    expect(ok.status).toBe(200);
  }, 60_000);
});
