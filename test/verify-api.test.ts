import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { Writable } from 'node:stream';
import { Redis } from 'ioredis';
import { photoJpeg } from './support/photos.js';
import { multipart, onboard, signAndFetch, startStack, type Stack } from './support/stack.js';

const CALLER_IP = '203.0.113.77';
let stack: Stack;
let tenant: { tenant_id: string; api_key: string };
let signed: { asset_id: string; manifest_id: string; manifest_uri: string };
const logLines: string[] = [];
const capture = () =>
  new Writable({
    write(chunk: Buffer, _encoding, done) {
      logLines.push(chunk.toString());
      done();
    },
  });

beforeAll(async () => {
  // Every service's log lines (at debug level) are captured: the caller's address must appear in none.
  stack = await startStack(
    ['watermark', 'signer', 'verifier', 'gateway'],
    { PUBLIC_VERIFY_PER_MINUTE: '4', LOG_LEVEL: 'debug' },
    { gateway: capture(), verifier: capture(), signer: capture(), watermark: capture(), billing: capture() },
  );
  tenant = await onboard(stack);
  const photo = await photoJpeg('chelsea');
  ({ signed } = await signAndFetch<typeof signed>(stack, tenant.api_key, {
    recipe: 'image-genai-v1',
    bytes: photo,
    name: 'c.jpg',
  }));
}, 120_000);
afterAll(() => stack?.stop());

const problemCode = async (res: Response) => ((await res.json()) as { code: string }).code;

describe('POST /v1/verify inputs (authenticated)', () => {
  it('verifies by asset_id for its own tenant, and by Cairn manifest_uri', async () => {
    const byId = await stack.request('/v1/verify', {
      method: 'POST',
      key: tenant.api_key,
      json: { asset_id: signed.asset_id },
    });
    expect(byId.status).toBe(200);
    expect(((await byId.json()) as { status: string }).status).toBe('verified_manifest_and_watermark_match');
    const byUri = await stack.request('/v1/verify', {
      method: 'POST',
      key: tenant.api_key,
      json: { manifest_uri: signed.manifest_uri },
    });
    expect(((await byUri.json()) as { status: string }).status).toBe('verified_manifest_and_watermark_match');
  });

  it('no input → 400 cairn.verify.no_input; two inputs → 400', async () => {
    const none = await stack.request('/v1/verify', { method: 'POST', key: tenant.api_key, json: {} });
    expect(none.status).toBe(400);
    expect(await problemCode(none)).toBe('cairn.verify.no_input');
    const empty = await stack.request('/v1/verify', { method: 'POST', key: tenant.api_key });
    expect(await problemCode(empty)).toBe('cairn.verify.no_input');
    const both = await stack.request('/v1/verify', {
      method: 'POST',
      key: tenant.api_key,
      json: { asset_id: signed.asset_id, manifest_uri: signed.manifest_uri },
    });
    expect(both.status).toBe(400);
  });

  it('unsupported bytes → 415 cairn.verify.unsupported_file_type', async () => {
    const res = await stack.request('/v1/verify', {
      method: 'POST',
      key: tenant.api_key,
      body: multipart(
        {},
        { field: 'file', bytes: Buffer.from([0x00, 0x01, 0x02, 0x03, 0xfe, 0xff, 0x10]), name: 'x.jpg' },
      ),
    });
    expect(res.status).toBe(415);
    expect(await problemCode(res)).toBe('cairn.verify.unsupported_file_type');
  });

  it('follows no manifest_uri outside Cairn (no server-side request forgery)', async () => {
    for (const uri of [
      'http://169.254.169.254/latest/meta-data/',
      `http://127.0.0.1:1/v1/manifests/${signed.manifest_id}`,
      'file:///etc/passwd',
      'https://example.com/m.c2pa',
    ]) {
      const res = await stack.request('/v1/verify', {
        method: 'POST',
        key: tenant.api_key,
        json: { manifest_uri: uri },
      });
      expect(res.status).toBe(400);
    }
  });

  it('GET /v1/verify/{manifest_id} answers the stored result; unknown ids are 404', async () => {
    const res = await stack.request(`/v1/verify/${signed.manifest_id}`, { key: tenant.api_key });
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({
      status: 'verified_manifest_and_watermark_match',
      manifest_id: signed.manifest_id,
      asset_id: signed.asset_id,
    });
    expect((await stack.request('/v1/verify/m_01JAAAAAAAAAAAAAAAAAAAAAAA', { key: tenant.api_key })).status).toBe(404);
    expect((await stack.request(`/v1/verify/${signed.manifest_id}`)).status).toBe(401);
  });

  it('an invalid key on verify is 401, not a silent public verify', async () => {
    const res = await stack.request('/v1/verify', {
      method: 'POST',
      headers: { authorization: 'Bearer nope' },
      json: { manifest_uri: signed.manifest_uri },
    });
    expect(res.status).toBe(401);
  });
});

describe('public verify', () => {
  it('needs no key, is limited per address (429 with Retry-After), and writes no caller address anywhere', async () => {
    const publicVerify = () =>
      stack.request('/v1/verify', {
        method: 'POST',
        headers: { 'x-forwarded-for': CALLER_IP },
        json: { manifest_uri: signed.manifest_uri },
      });
    const statuses: number[] = [];
    for (let i = 0; i < 5; i++) statuses.push((await publicVerify()).status);
    expect(statuses.slice(0, 4)).toEqual([200, 200, 200, 200]);
    const refused = await publicVerify();
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await problemCode(refused)).toBe('cairn.ratelimit.exceeded');
    // Asset ids need a key.
    expect(
      (
        await stack.request('/v1/verify', {
          method: 'POST',
          headers: { 'x-forwarded-for': '198.51.100.9' },
          json: { asset_id: signed.asset_id },
        })
      ).status,
    ).toBe(401);

    const logs = logLines.join('');
    expect(logs).toContain('/v1/verify');
    expect(logs).not.toContain(CALLER_IP);
    const redis = new Redis(String(stack.env.REDIS_URL));
    try {
      const keys = await redis.keys(`${String(stack.env.REDIS_KEY_PREFIX)}*`);
      expect(keys.length).toBeGreaterThan(0);
      expect(keys.join(' ')).not.toContain(CALLER_IP);
    } finally {
      redis.disconnect();
    }
  });
});
