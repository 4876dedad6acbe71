import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFile } from 'node:fs/promises';
import sharp from 'sharp';
import {
  CairnApiError,
  CairnClient,
  verifyWebhookSignature,
  type AuditEntry,
  type Job,
  type UploadProgress,
} from '../packages/sdk/src/index.js';
import { startReceiver, type Receiver } from '../services/webhook/test/support/receiver.js';
import { waitFor } from '@cairn/testing';
import { onboard, startStack, type Stack } from './support/stack.js';
import { SHARED_DIR } from '../packages/testing/src/shared.js';

const PHOTOS = `${SHARED_DIR}/fixtures/photos`;
// Small files sign while the client waits (200); the full-size photo becomes a job (202) the SDK polls.
const SYNC_MAX = 40_000;
let stack: Stack;
let tenant: { tenant_id: string; api_key: string };
let client: CairnClient;
let receiver: Receiver;
let small: Buffer;
let large: Buffer;

beforeAll(async () => {
  stack = await startStack(['watermark', 'signer', 'verifier', 'gateway', 'audit', 'webhook'], {
    SYNC_SIGN_MAX_BYTES: String(SYNC_MAX),
    PUBLIC_VERIFY_PER_MINUTE: '30',
    WEBHOOK_POLL_INTERVAL_MS: '50',
  });
  tenant = await onboard(stack);
  client = new CairnClient({ baseUrl: stack.baseUrl, apiKey: tenant.api_key });
  receiver = await startReceiver();
  small = await sharp(await readFile(`${PHOTOS}/coffee.png`))
    .resize(400, 400)
    .jpeg({ quality: 75 })
    .toBuffer();
  large = await sharp(await readFile(`${PHOTOS}/astronaut.png`))
    .jpeg({ quality: 90 })
    .toBuffer();
}, 120_000);
afterAll(async () => {
  await receiver?.close();
  await stack?.stop();
});

describe('@cairn/sdk against the running fleet', () => {
  it('signs a small file (200) and a large one through its job (202, polled), each with an Idempotency-Key made for it', async () => {
    expect(small.length).toBeLessThan(SYNC_MAX);
    expect(large.length).toBeGreaterThan(SYNC_MAX);
    const first = await client.sign({
      file: small,
      filename: 'coffee.jpg',
      recipe: 'image-genai-v1',
      metadata: { generator: 'SDK', model: 't1' },
    });
    expect(first).toMatchObject({
      asset_id: expect.stringMatching(/^a_/),
      media_type: 'image/jpeg',
      verifier_url: `${stack.baseUrl}/v/${first.asset_id}`,
    });
    // Keys are made per call: the same bytes signed again are a new asset, not a replay.
    const second = await client.sign({ file: small, recipe: 'image-genai-v1' });
    expect(second.asset_id).not.toBe(first.asset_id);
    // The same explicit key is a replay of the first answer.
    const key = crypto.randomUUID();
    const a = await client.sign({ file: small, recipe: 'image-genai-v1', idempotencyKey: key });
    const b = await client.sign({ file: small, recipe: 'image-genai-v1', idempotencyKey: key });
    expect(b.asset_id).toBe(a.asset_id);

    const seen: Job[] = [];
    const fromJob = await client.sign({
      file: new Blob([large]),
      filename: 'astronaut.jpg',
      recipe: 'image-genai-v1',
      pollIntervalMs: 200,
      onJob: (job) => seen.push(job),
    });
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.at(-1)?.status).toBe('done');
    expect(fromJob.asset_id).toMatch(/^a_/);
    expect(fromJob.manifest_uri).toContain('/v1/manifests/');
    const job = await client.sign({ file: large, recipe: 'image-genai-v1', wait: false });
    expect((job as unknown as Job).job_id).toMatch(/^j_/);
  }, 120_000);

  it('verifies a file publicly (no key), by asset_id with the key, and by manifest_uri', async () => {
    const signed = await client.sign({
      file: small,
      recipe: 'image-genai-v1',
      metadata: { generator: 'SDK', model: 't1' },
    });
    const download = await fetch(signed.asset_url, { headers: { authorization: `Bearer ${tenant.api_key}` } });
    const bytes = new Uint8Array(await download.arrayBuffer());
    const anonymous = new CairnClient({ baseUrl: stack.baseUrl });
    const byFile = await anonymous.verify({ file: bytes, filename: 'signed.jpg' });
    expect(byFile.status).toBe('verified_manifest_and_watermark_match');
    expect(byFile.claims).toMatchObject({ generator: 'SDK', model: 't1', ai_generated: true });
    expect(byFile.does_not_prove.length).toBeGreaterThan(0);
    expect((await client.verify({ assetId: signed.asset_id })).asset_id).toBe(signed.asset_id);
    expect((await anonymous.verify({ manifestUri: signed.manifest_uri })).manifest_id).toBe(signed.manifest_id);
  }, 60_000);

  it('answers refusals as a typed CairnApiError carrying the problem', async () => {
    const anonymous = new CairnClient({ baseUrl: stack.baseUrl });
    const error = await anonymous.verify({ assetId: 'a_01JAAAAAAAAAAAAAAAAAAAAAAA' }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(CairnApiError);
    const apiError = error as CairnApiError;
    expect(apiError.status).toBe(401);
    expect(apiError.code).toBe('cairn.auth.invalid_key');
    expect(apiError.problem.type).toBe(`${stack.baseUrl}/docs/api/errors#cairn.auth.invalid_key`);
    expect(apiError.requestId).toBeTruthy();
    await expect(client.sign({ file: small, recipe: 'no-such-recipe' })).rejects.toMatchObject({
      code: 'cairn.sign.invalid_recipe',
      status: 400,
    });
  });

  it('looks up a re-encoded copy, and reads usage and keys', async () => {
    const signed = await client.sign({ file: small, recipe: 'image-genai-v1' });
    const bytes = Buffer.from(
      await (await fetch(signed.asset_url, { headers: { authorization: `Bearer ${tenant.api_key}` } })).arrayBuffer(),
    );
    const copy = await sharp(bytes).jpeg({ quality: 85 }).toBuffer();
    // Indexing follows asset.signed asynchronously: the copy is found once the sign is indexed.
    const found = await waitFor(
      'the signed asset indexed',
      async () => {
        const answer = await client.lookup({ file: copy, filename: 'copy.jpg' });
        return answer.matches.some((m) => m.asset_id === signed.asset_id) && answer;
      },
      30_000,
      250,
    );
    expect(found.matches.map((m) => m.asset_id)).toContain(signed.asset_id);
    // billing commits a sign from asset.signed, after the answer: the SDK reads it once that event is in.
    const usage = await waitFor('the sign metered', async () => {
      const read = await client.usage();
      return (read.meters.image_sign?.used ?? 0) > 0 && read;
    });
    expect(usage.meters.image_sign?.used).toBeGreaterThan(0);
    const created = await client.keys.create(tenant.tenant_id, { scope: 'read', description: 'sdk test' });
    expect(created.api_key).toBeTruthy();
    expect((await client.keys.list(tenant.tenant_id)).map((k) => k.key_id)).toContain(created.key_id);
    expect((await client.keys.revoke(tenant.tenant_id, created.key_id)).status).toBe('revoked');
  }, 60_000);

  it('iterates the audit log across pages, newest first', async () => {
    // Something to audit even when this test runs alone (-t).
    await client.sign({ file: small, recipe: 'image-genai-v1' });
    const before = await waitFor('audit entries', async () => {
      const page = await client.auditPage({ pageSize: 1000 });
      return page.entries.length >= 3 && page.entries;
    });
    const urls: string[] = [];
    // A fetch that records what the iterator asked for (the real network underneath).
    const recording = new CairnClient({
      baseUrl: stack.baseUrl,
      apiKey: tenant.api_key,
      fetch: (input, init) => (urls.push(input instanceof Request ? input.url : String(input)), fetch(input, init)),
    });
    const entries = [];
    for await (const entry of recording.audit({ pageSize: 2 })) entries.push(entry);
    // Entries may still be arriving (events are asynchronous): every one seen before is there, each once.
    const ids = entries.map((e) => e.entry_id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const entry of before) expect(ids).toContain(entry.entry_id);
    expect(urls.length).toBeGreaterThanOrEqual(Math.ceil(before.length / 2));
    expect(urls.slice(1).every((u) => new URL(u).searchParams.has('cursor'))).toBe(true);
    const seqs = entries.map((e) => e.seq);
    expect([...seqs].sort((x, y) => y - x)).toEqual(seqs);
  }, 60_000);

  it('streams the audit log as NDJSON: the same entries as the pages, newest first, and a loop may stop after the first entries', async () => {
    await client.sign({ file: small, recipe: 'image-genai-v1' });
    await waitFor('audit entries', async () => (await client.auditPage({ pageSize: 3 })).entries.length >= 2);
    const ids = (entries: AuditEntry[]) => entries.map((e) => e.entry_id);
    // Events are asynchronous: read both until they agree (a late entry can land between the two reads).
    const agreed = await waitFor('NDJSON and pages agree', async () => {
      const streamed: AuditEntry[] = [];
      for await (const entry of client.auditNdjson()) streamed.push(entry);
      const paged: AuditEntry[] = [];
      for await (const entry of client.audit({ pageSize: 2 })) paged.push(entry);
      return JSON.stringify(ids(streamed)) === JSON.stringify(ids(paged)) && streamed;
    });
    expect(agreed.length).toBeGreaterThanOrEqual(2);
    const seqs = agreed.map((e) => e.seq);
    expect([...seqs].sort((x, y) => y - x)).toEqual(seqs);
    expect(agreed[0]).toMatchObject({ hash: expect.any(String), prev_hash: expect.any(String) });
    const firstTwo: AuditEntry[] = [];
    for await (const entry of client.auditNdjson({ limit: 5 })) {
      firstTwo.push(entry);
      if (firstTwo.length === 2) break;
    }
    expect(ids(firstTwo)).toEqual(ids(agreed).slice(0, 2));
  }, 60_000);

  it('sends a file above uploadSessionAboveBytes through an upload session, streamed with progress and without the key; signs and verifies it by upload_id', async () => {
    const calls: Array<{ call: string; authorized: boolean }> = [];
    const sessions = new CairnClient({
      baseUrl: stack.baseUrl,
      apiKey: tenant.api_key,
      uploadSessionAboveBytes: 10_000,
      fetch: (input, init) => {
        const url = new URL(input instanceof Request ? input.url : String(input));
        calls.push({
          call: `${init?.method ?? 'GET'} ${url.pathname}`,
          authorized: new Headers(init?.headers).has('authorization'),
        });
        return fetch(input, init);
      },
    });
    expect(small.length).toBeGreaterThan(10_000);
    const progress: UploadProgress[] = [];
    const signed = await sessions.sign({
      file: new Blob([small]),
      filename: 'coffee.jpg',
      recipe: 'image-genai-v1',
      onUploadProgress: (p) => progress.push(p),
    });
    expect(signed.asset_id).toMatch(/^a_/);
    expect(calls.map((c) => c.call)).toEqual([
      'POST /v1/uploads',
      expect.stringMatching(/^PUT \/v1\/uploads\/[\w-]+\/content$/),
      'POST /v1/sign',
    ]);
    // The upload URL is signed on its own: the API key is not sent to it.
    expect(calls.map((c) => c.authorized)).toEqual([true, false, true]);
    expect(progress.at(-1)).toEqual({ sent: small.length, total: small.length });
    const sent = progress.map((p) => p.sent);
    expect([...sent].sort((a, b) => a - b)).toEqual(sent);

    // What was signed is the file that was uploaded: its download verifies, sent again through a session.
    const download = Buffer.from(
      await (await fetch(signed.asset_url, { headers: { authorization: `Bearer ${tenant.api_key}` } })).arrayBuffer(),
    );
    calls.length = 0;
    const verdict = await sessions.verify({ file: download, filename: 'signed.jpg' });
    expect(calls.map((c) => c.call)[0]).toBe('POST /v1/uploads');
    expect(calls.at(-1)?.call).toBe('POST /v1/verify');
    expect(verdict.status).toBe('verified_manifest_and_watermark_match');
    expect(verdict.asset_id).toBe(signed.asset_id);

    // Below the threshold the file goes inside the multipart request, counted as it streams (framing included).
    const inline: UploadProgress[] = [];
    await client.sign({ file: small, recipe: 'image-genai-v1', onUploadProgress: (p) => inline.push(p) });
    const last = inline.at(-1)!;
    expect(last.sent).toBe(last.total);
    expect(last.total).toBeGreaterThan(small.length);
    expect(inline.length).toBeGreaterThan(1);
  }, 120_000);

  it('manages webhooks, and verifyWebhookSignature accepts a real delivery (either header) and refuses forgeries', async () => {
    const created = await client.webhooks.create({ url: receiver.url, events: ['job.completed'], description: 'sdk' });
    expect(created.secret).toMatch(/^whsec_/);
    expect((await client.webhooks.list()).map((w) => w.webhook_id)).toContain(created.webhook_id);
    expect((await client.webhooks.get(created.webhook_id)).secret).toBeUndefined();
    // An async sign ends with job.completed, delivered to the receiver.
    await client.sign({ file: large, recipe: 'image-genai-v1', pollIntervalMs: 200 });
    await waitFor('a webhook delivery', () => receiver.received.length > 0);
    const delivery = receiver.received[0]!;
    const secret = created.secret!;
    expect(await verifyWebhookSignature(delivery.body, delivery.headers, secret)).toBe(true);
    const only = (name: string) => ({ [name]: String(delivery.headers['cairn-signature']) });
    expect(await verifyWebhookSignature(delivery.body, only('X-Cairn-Signature'), secret)).toBe(true);
    expect(
      await verifyWebhookSignature(
        new TextEncoder().encode(delivery.body),
        new Headers(only('Cairn-Signature')),
        secret,
      ),
    ).toBe(true);
    expect(await verifyWebhookSignature(delivery.body, delivery.headers, 'whsec_wrong')).toBe(false);
    expect(
      await verifyWebhookSignature(delivery.body.replace('job.completed', 'job.failed'), delivery.headers, secret),
    ).toBe(false);
    expect(await verifyWebhookSignature(delivery.body, {}, secret)).toBe(false);
    expect(await verifyWebhookSignature(delivery.body, { 'cairn-signature': 'sha256=zz' }, secret)).toBe(false);
    await client.webhooks.delete(created.webhook_id);
    await expect(client.webhooks.get(created.webhook_id)).rejects.toMatchObject({
      status: 404,
      code: 'cairn.not_found',
    });
  }, 90_000);

  it('retries a 429 after Retry-After and then succeeds; without retries the 429 is the error', async () => {
    const signed = await client.sign({ file: small, recipe: 'image-genai-v1' });
    const statuses: number[] = [];
    const recordingFetch: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      statuses.push(res.status);
      return res;
    };
    const noRetry = new CairnClient({ baseUrl: stack.baseUrl, maxRetries: 0 });
    const retrying = new CairnClient({ baseUrl: stack.baseUrl, maxRetries: 5, fetch: recordingFetch });
    let result: Awaited<ReturnType<CairnClient['verify']>> | undefined;
    // The bucket refills one verify every 2 s: a token can come back between the refusal below and the retrying
    // client's first request (a slow turnaround on a loaded machine), and then that run never met a 429. Such a
    // run proves nothing and the budget is burnt again; the assertions below hold for the run that met one.
    for (let run = 0; run < 5 && statuses[0] !== 429; run++) {
      statuses.length = 0;
      // Burn this address's public verify budget (30 a minute) with cheap refused verifies.
      let refused: unknown;
      for (let i = 0; i < 40 && !refused; i++) {
        refused = await noRetry.verify({ manifestUri: 'http://127.0.0.1:1/none' }).then(
          () => undefined,
          (e: unknown) => (e instanceof CairnApiError && e.status === 429 ? e : undefined),
        );
      }
      expect(refused).toMatchObject({ code: 'cairn.ratelimit.exceeded', status: 429 });
      result = await retrying.verify({ manifestUri: signed.manifest_uri });
    }
    expect(statuses[0]).toBe(429);
    expect(statuses.at(-1)).toBe(200);
    expect(result?.manifest_id).toBe(signed.manifest_id);
  }, 90_000);
});
