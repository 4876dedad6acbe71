import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFile } from 'node:fs/promises';
import sharp from 'sharp';
import { type Bus, type RunningConsumer } from '@cairn/bus';
import { connectBus, collectEvents } from './support/events.js';
import { type AnyEvent } from '@cairn/events';
import { waitFor } from '@cairn/testing';
import { closePkcs11 } from '../services/signer/src/adapters/key-backends.js';
import { setupSoftHsm, USER_PIN, type SoftHsm } from '../services/signer/test/fixtures/softhsm.js';
import { multipart, onboard, startStack, type Stack } from './support/stack.js';
import { SHARED_DIR } from '../packages/testing/src/shared.js';
import { createBlobStore } from '../packages/blob/src/index.js';

const PHOTO = `${SHARED_DIR}/fixtures/photos/coffee.png`;
let hsm: SoftHsm;
let tokenLabel: string;
let stack: Stack;
let tenant: { tenant_id: string; api_key: string };
let photo: Buffer;
let bus: Bus;
let observer: RunningConsumer;
const events: AnyEvent[] = [];
const assetOf = (event: AnyEvent) => ('asset_id' in event.data ? event.data.asset_id : undefined);

beforeAll(async () => {
  hsm = setupSoftHsm();
  tokenLabel = hsm.initToken('cairn-e2e');
  stack = await startStack(['watermark', 'signer', 'verifier', 'gateway'], {
    SIGNER_KEY_BACKEND: 'pkcs11',
    SIGNER_PKCS11_TOKEN: tokenLabel,
    SIGNER_PKCS11_PIN: USER_PIN,
    // Every sign becomes a job, so the asynchronous path is the one exercised here.
    SYNC_SIGN_MAX_BYTES: '1',
    ASSET_SWEEP_INTERVAL_MS: '300',
  });
  tenant = await onboard(stack);
  photo = await sharp(await readFile(PHOTO))
    .jpeg()
    .toBuffer();
  bus = await connectBus(stack.env);
  observer = await collectEvents(
    bus,
    'test-observer',
    ['asset.signed', 'manifest.signed', 'job.completed', 'job.failed'],
    events,
  );
}, 120_000);

afterAll(async () => {
  await observer?.stop();
  await bus?.close();
  await stack?.stop();
  closePkcs11();
  hsm?.cleanup();
});

function sign(bytes: Buffer) {
  return stack.request('/v1/sign', {
    method: 'POST',
    key: tenant.api_key,
    headers: { 'idempotency-key': crypto.randomUUID() },
    body: multipart({ recipe: 'image-genai-v1' }, { field: 'asset', bytes, name: 'p.jpg' }),
  });
}

async function job(jobId: string): Promise<Record<string, unknown>> {
  return (await (await stack.request(`/v1/jobs/${jobId}`, { key: tenant.api_key })).json()) as Record<string, unknown>;
}

const finished = (jobId: string) =>
  waitFor(`job ${jobId}`, async () => {
    const current = await job(jobId);
    return current.status === 'done' || current.status === 'failed' ? current : undefined;
  });

describe('signing with the key on a PKCS#11 token', () => {
  let done: Record<string, unknown>;

  it('signs through the token, as a job, and emits asset.signed, manifest.signed and job.completed', async () => {
    const accepted = (await (await sign(photo)).json()) as { job_id: string };
    done = await finished(accepted.job_id);
    expect(done).toMatchObject({ status: 'done', asset_id: expect.stringMatching(/^a_/) });
    await waitFor('events', async () =>
      events.filter((e) => assetOf(e) === done.asset_id).length >= 3 ? true : undefined,
    );
    const mine = events.filter((e) => assetOf(e) === done.asset_id);
    expect(mine.map((e) => e.type).sort()).toEqual(['asset.signed', 'job.completed', 'manifest.signed']);
    expect(mine.find((e) => e.type === 'asset.signed')?.data).toMatchObject({
      'billing.meter': 'image_sign',
      manifest_id: done.manifest_id,
      watermark_id: done.watermark_id,
    });
    expect(mine.find((e) => e.type === 'job.completed')?.data).toMatchObject({
      job_id: accepted.job_id,
      asset_id: done.asset_id,
      manifest_uri: done.manifest_uri,
      verifier_url: done.verifier_url,
      recipe_id: 'image-genai-v1',
    });
    expect(mine.every((e) => e.tenant_id === tenant.tenant_id)).toBe(true);
    // The spec's Job carries `anchor` "as in Sign result", and so does job.completed.
    expect(done.anchor).toEqual({
      batch_id: expect.stringMatching(/^b_/),
      status: expect.stringMatching(/^(queued|pending|anchored)$/),
    });
    expect(mine.find((e) => e.type === 'job.completed')?.data.anchor).toEqual(done.anchor);
    const bytes = Buffer.from(
      await (await stack.request(`/v1/assets/${String(done.asset_id)}/content`, { key: tenant.api_key })).arrayBuffer(),
    );
    const verdict = (await (
      await stack.request('/v1/verify', {
        method: 'POST',
        body: multipart({}, { field: 'file', bytes, name: 'v.jpg' }),
      })
    ).json()) as { status: string; signals: { timestamp_valid?: boolean } };
    expect(verdict.status).toBe('verified_manifest_and_watermark_match');
    // Stamped by Cairn's TSA like every other sign: the token's key signs the claim, the TSA the time.
    expect(verdict.signals.timestamp_valid).toBe(true);
  }, 60_000);

  it('a job fails with a problem (and job.failed) when the input cannot be signed', async () => {
    const tiny = await sharp(photo).resize(120, 80).jpeg().toBuffer();
    const accepted = (await (await sign(tiny)).json()) as { job_id: string };
    const failed = await finished(accepted.job_id);
    expect(failed).toMatchObject({ status: 'failed', problem: { code: 'cairn.validation.invalid_body', status: 400 } });
    await waitFor('job.failed', async () =>
      events.some((e) => e.type === 'job.failed' && e.data.job_id === accepted.job_id) ? true : undefined,
    );
  }, 60_000);

  it('a job survives a signer restart while it waits for a peer', async () => {
    await stack.stopService('watermark');
    const accepted = (await (await sign(photo)).json()) as { job_id: string };
    await waitFor('a first failed attempt', async () =>
      ((await job(accepted.job_id)).attempts as number) >= 1 ? true : undefined,
    );
    await stack.stopService('signer');
    await stack.restart('signer');
    await stack.restart('watermark');
    const done = await finished(accepted.job_id);
    expect(done.status).toBe('done');
    expect(done.attempts as number).toBeGreaterThanOrEqual(2);
  }, 90_000);

  it('answers 503 cairn.signer.unavailable when the key backend cannot sign', async () => {
    // Synchronous path for this one: the gateway must answer the failure, not a job.
    hsm.deleteToken(tokenLabel);
    const gatewayEnv = { SYNC_SIGN_MAX_BYTES: String(10 * 1024 * 1024) };
    await stack.stopService('gateway');
    Object.assign(stack.env, gatewayEnv);
    await stack.restart('gateway');
    const res = await sign(photo);
    expect(res.status).toBe(503);
    const problem = (await res.json()) as { code: string; detail: string };
    expect(problem.code).toBe('cairn.signer.unavailable');
    expect(problem.detail).not.toMatch(/pkcs|softhsm|token/i);
  }, 60_000);
});

describe('metering of asynchronous signs', () => {
  it('bills the jobs that produced an asset and none of the failed ones or the refused sign', async () => {
    // Above: two jobs completed, one job failed (image too small), and one synchronous sign answered 503.
    const usage = await waitFor('reservations settled', async () => {
      const body = (await (await stack.request('/v1/usage', { key: tenant.api_key })).json()) as {
        meters: Record<string, { used: number; reserved?: number }>;
      };
      return body.meters.image_sign && !body.meters.image_sign.reserved ? body : undefined;
    });
    expect(usage.meters.image_sign?.used).toBe(2);
  }, 30_000);
});

describe('retention', () => {
  it('deletes the derived asset and its page thumbnail after its retention: 410 and 404, while the manifest stays', async () => {
    // Age an asset signed above past its retention (the recipe keeps image assets 30 days).
    const admin = await stack.sandbox.adminClient();
    const blobs = createBlobStore(String(stack.env.BLOB_STORE_URL));
    let assetId: string;
    let manifestId: string;
    let thumbnailKey: string;
    try {
      const { rows: kept } = await admin.query<{ asset_id: string }>(
        'select asset_id from signer.assets where tenant_id = $1 and deleted_at is null',
        [tenant.tenant_id],
      );
      expect(kept.length).toBeGreaterThan(0);
      // Its thumbnail is made (and kept) while the asset is.
      expect((await stack.request(`/v/${kept[0]!.asset_id}/thumbnail.jpg`)).status).toBe(200);
      thumbnailKey = `${tenant.tenant_id}/thumbnails/${kept[0]!.asset_id}.jpg`;
      expect(await blobs.head(thumbnailKey)).not.toBeNull();
      const { rows } = await admin.query<{ asset_id: string; manifest_id: string }>(
        "update signer.assets set expires_at = now() - interval '1 second' where tenant_id = $1 and asset_id = $2 returning asset_id, manifest_id",
        [tenant.tenant_id, kept[0]!.asset_id],
      );
      assetId = rows[0]!.asset_id;
      manifestId = rows[0]!.manifest_id;
    } finally {
      await admin.end();
    }
    await waitFor(
      'the sweep',
      async () =>
        (await stack.request(`/v1/assets/${assetId}/content`, { key: tenant.api_key })).status === 410
          ? true
          : undefined,
      10_000,
    );
    const gone = await stack.request(`/v1/assets/${assetId}/content`, { key: tenant.api_key });
    expect(((await gone.json()) as { code: string }).code).toBe('cairn.asset.expired');
    expect((await stack.request(`/v1/manifests/${manifestId}`)).status).toBe(200);
    expect((await stack.request(`/v/${assetId}`)).status).toBe(200);
    expect((await stack.request(`/v/${assetId}/thumbnail.jpg`)).status).toBe(404);
    // 410 follows expires_at at once; the sweep that deletes the files runs on its own interval after it.
    await waitFor('the thumbnail deleted by the sweep', async () => (await blobs.head(thumbnailKey)) === null, 10_000);
  }, 30_000);
});
