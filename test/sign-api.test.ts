import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFile } from 'node:fs/promises';
import sharp from 'sharp';
import { multipart, onboard, startStack, type Stack } from './support/stack.js';
import { SHARED_DIR } from '../packages/testing/src/shared.js';

const PHOTOS = `${SHARED_DIR}/fixtures/photos`;
const SYNC_MAX = 200 * 1024;
let stack: Stack;
let tenant: { tenant_id: string; api_key: string };
let small: Buffer;
let large: Buffer;

beforeAll(async () => {
  stack = await startStack(['watermark', 'signer', 'verifier', 'gateway'], {
    SYNC_SIGN_MAX_BYTES: String(SYNC_MAX),
    UPLOAD_MAX_BYTES: String(3 * 1024 * 1024),
  });
  tenant = await onboard(stack);
  const photo = await readFile(`${PHOTOS}/chelsea.png`);
  small = await sharp(photo).jpeg({ quality: 85 }).toBuffer();
  large = await sharp(await readFile(`${PHOTOS}/astronaut.png`))
    .resize(1200, 1200)
    .png()
    .toBuffer();
  expect(small.length).toBeLessThan(SYNC_MAX);
  expect(large.length).toBeGreaterThan(SYNC_MAX);
}, 120_000);
afterAll(() => stack?.stop());

function sign(
  bytes: Buffer,
  options: {
    key?: string;
    idempotencyKey?: string | null;
    recipe?: string;
    metadata?: unknown;
    name?: string;
    field?: string;
  } = {},
) {
  const headers: Record<string, string> = {};
  if (options.idempotencyKey !== null) headers['idempotency-key'] = options.idempotencyKey ?? crypto.randomUUID();
  const fields: Record<string, string> = { recipe: options.recipe ?? 'image-genai-v1' };
  if (options.metadata !== undefined)
    fields.metadata = typeof options.metadata === 'string' ? options.metadata : JSON.stringify(options.metadata);
  return stack.request('/v1/sign', {
    method: 'POST',
    key: options.key ?? tenant.api_key,
    headers,
    body: multipart(fields, { field: options.field ?? 'asset', bytes, name: options.name ?? 'upload.jpg' }),
  });
}

async function problem(res: Response) {
  expect(res.headers.get('content-type')).toContain('application/problem+json');
  return (await res.json()) as { code: string; detail: string; status: number };
}

describe('POST /v1/sign idempotency', () => {
  it('replays the original answer for the same key and payload, without signing twice', async () => {
    const key = crypto.randomUUID();
    const first = await sign(small, { idempotencyKey: key });
    const second = await sign(small, { idempotencyKey: key });
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(await second.json()).toEqual(await first.json());
  });

  it('refuses the same key with a different payload (409)', async () => {
    const key = crypto.randomUUID();
    expect((await sign(small, { idempotencyKey: key })).status).toBe(200);
    const other = await sign(small, { idempotencyKey: key, metadata: { generator: 'Other' } });
    expect(other.status).toBe(409);
    expect((await problem(other)).code).toBe('cairn.sign.idempotency_conflict');
  });

  it('makes exactly one asset of 20 concurrent duplicates', async () => {
    const key = crypto.randomUUID();
    const responses = await Promise.all(Array.from({ length: 20 }, () => sign(small, { idempotencyKey: key })));
    const bodies = await Promise.all(
      responses.map(async (r) => ({
        status: r.status,
        retryAfter: r.headers.get('retry-after'),
        body: (await r.json()) as { asset_id?: string; code?: string },
      })),
    );
    // One runs the sign; a duplicate arriving while it runs is told so (409, Retry-After) instead of holding a
    // database connection while it waits, and one arriving after it ended gets the recorded answer.
    const signed = bodies.filter((b) => b.status === 200);
    const busy = bodies.filter((b) => b.status !== 200);
    expect(signed.length).toBeGreaterThanOrEqual(1);
    for (const b of busy) {
      expect(b.status).toBe(409);
      expect(b.body.code).toBe('cairn.idempotency.in_progress');
      expect(Number(b.retryAfter)).toBeGreaterThanOrEqual(1);
    }
    const retried = await sign(small, { idempotencyKey: key });
    expect(retried.status).toBe(200);
    const assetIds = new Set([
      ...signed.map((b) => b.body.asset_id),
      ((await retried.json()) as { asset_id: string }).asset_id,
    ]);
    expect(assetIds.size).toBe(1);
  }, 60_000);

  it('requires an Idempotency-Key (a UUID)', async () => {
    expect((await problem(await sign(small, { idempotencyKey: null }))).code).toBe(
      'cairn.sign.missing_idempotency_key',
    );
    expect((await problem(await sign(small, { idempotencyKey: 'not-a-uuid' }))).code).toBe(
      'cairn.sign.missing_idempotency_key',
    );
  });
});

describe('POST /v1/sign asynchronously', () => {
  it('answers 202 with a job above the synchronous threshold; the job completes with the sign result', async () => {
    const res = await sign(large, { name: 'big.png' });
    expect(res.status).toBe(202);
    const accepted = (await res.json()) as { job_id: string; poll_url: string; status: string };
    expect(accepted).toMatchObject({
      job_id: expect.stringMatching(/^j_/),
      status: 'queued',
      poll_url: `${stack.baseUrl}/v1/jobs/${accepted.job_id}`,
    });
    let job: Record<string, unknown> = {};
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline) {
      job = (await (await stack.request(`/v1/jobs/${accepted.job_id}`, { key: tenant.api_key })).json()) as Record<
        string,
        unknown
      >;
      if (job.status === 'done' || job.status === 'failed') break;
      expect(['queued', 'running']).toContain(job.status);
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(job).toMatchObject({
      status: 'done',
      asset_id: expect.stringMatching(/^a_/),
      watermark_id: expect.stringMatching(/^w_/),
      manifest_uri: expect.any(String),
      verifier_url: expect.any(String),
      media_type: 'image/png',
    });
    const other = await onboard(stack);
    expect((await stack.request(`/v1/jobs/${accepted.job_id}`, { key: other.api_key })).status).toBe(404);
  }, 60_000);
});

describe('POST /v1/sign refusals', () => {
  it('decides the type by content: a PNG named .jpg is signed as PNG', async () => {
    const png = await sharp(small).resize(256, 256, { fit: 'cover' }).png({ compressionLevel: 9 }).toBuffer();
    expect(png.length).toBeLessThan(SYNC_MAX);
    const res = await sign(png, { name: 'looks-like.jpg' });
    expect(res.status).toBe(200);
    expect(((await res.json()) as { media_type: string }).media_type).toBe('image/png');
  });

  it('refuses a type the recipe does not allow (400 cairn.sign.unsupported_mime)', async () => {
    const res = await sign(Buffer.from('just some text, not an image at all\n'), { name: 'x.jpg' });
    expect(res.status).toBe(400);
    expect((await problem(res)).code).toBe('cairn.sign.unsupported_mime');
  });

  it('refuses a file over the upload limit (413) and a bad recipe (400)', async () => {
    const res = await sign(Buffer.alloc(4 * 1024 * 1024, 1));
    expect(res.status).toBe(413);
    expect((await problem(res)).code).toBe('cairn.sign.file_too_large');
    expect((await problem(await sign(small, { recipe: 'no-such-recipe' }))).code).toBe('cairn.sign.invalid_recipe');
  });

  it.each([
    [{ prompt: 'a cat on the moon' }, /prompt text must never be sent/],
    [{ prompt_hash: 'a cat on the moon' }, /prompt_hash/],
    [{ generator: 'X', seed: '42' }, /Allowed metadata fields/],
    ['{not json', /metadata must be a JSON object/],
  ])('refuses metadata %j with 400', async (metadata, detail) => {
    const res = await sign(small, { metadata });
    expect(res.status).toBe(400);
    const p = await problem(res);
    expect(p.code).toBe('cairn.validation.invalid_body');
    expect(p.detail).toMatch(detail);
  });

  it('accepts a proper prompt_hash', async () => {
    const res = await sign(small, {
      metadata: { prompt_hash: `sha256:${'ab'.repeat(32)}`, created_at: '2026-11-21T09:30:00Z' },
    });
    expect(res.status).toBe(200);
  });

  it('needs the file in the "asset" field and a sign-scoped key', async () => {
    expect((await problem(await sign(small, { field: 'file' }))).code).toBe('cairn.validation.invalid_body');
    const read = (await (
      await stack.request(`/v1/tenants/${tenant.tenant_id}/keys`, {
        method: 'POST',
        key: tenant.api_key,
        json: { scope: 'read' },
      })
    ).json()) as { api_key: string };
    expect((await problem(await sign(small, { key: read.api_key }))).code).toBe('cairn.auth.forbidden');
  });

  it('never answers 500 to a corrupt image', async () => {
    const corrupt = Buffer.concat([small.subarray(0, 600), Buffer.alloc(2000, 0x41)]);
    const res = await sign(corrupt);
    expect(res.status).toBe(400);
    expect((await problem(res)).code).toBe('cairn.sign.unsupported_mime');
  });
});

describe('assets and manifests', () => {
  it('keeps a tenant’s asset from every other tenant', async () => {
    const signed = (await (await sign(small)).json()) as { asset_id: string; manifest_id: string };
    const other = await onboard(stack);
    expect((await stack.request(`/v1/assets/${signed.asset_id}/content`, { key: other.api_key })).status).toBe(404);
    const verify = await stack.request('/v1/verify', {
      method: 'POST',
      key: other.api_key,
      json: { asset_id: signed.asset_id },
    });
    expect(verify.status).toBe(404);
    // The manifest itself is public.
    expect((await stack.request(`/v1/manifests/${signed.manifest_id}`)).status).toBe(200);
  });
});
