import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFile } from 'node:fs/promises';
import sharp from 'sharp';
import { recording } from './support/audio.js';
import { multipart, onboard, startStack, type Stack } from './support/stack.js';
import { SHARED_DIR } from '../packages/testing/src/shared.js';

// A sign never answers a watermark_id whose mark does not read back from its own output: the watermark service
// reads each marked file before answering it, embeds again stronger when it does not read, and when no setting
// reads the sign goes on without the mark and says so (warning, reason, audit entry). Images made here: a grayscale
// grass-like texture upscaled (the case that once got a watermark_id nobody could read), flat and smooth content,
// a signed photo signed again (its old mark under the new one), and a fully transparent WebP (whose colour the
// encoder does not keep, so no mark survives it).

let stack: Stack;
let tenant: { tenant_id: string; api_key: string };

beforeAll(async () => {
  stack = await startStack(['watermark', 'signer', 'verifier', 'audit', 'gateway']);
  tenant = await onboard(stack);
}, 120_000);
afterAll(() => stack?.stop());

interface SignAnswer {
  asset_id: string;
  watermark_id?: string;
  warnings?: string[];
  watermark_not_embedded_reason?: string;
}

async function sign(
  bytes: Buffer,
  name: string,
  recipe = 'image-genai-v1',
): Promise<{ signed: SignAnswer; signedBytes: Buffer }> {
  const res = await stack.request('/v1/sign', {
    method: 'POST',
    key: tenant.api_key,
    headers: { 'idempotency-key': crypto.randomUUID() },
    body: multipart(
      { recipe, metadata: JSON.stringify({ generator: 'Gen', model: 'v3' }) },
      { field: 'asset', bytes, name },
    ),
  });
  expect({ status: res.status, body: res.status === 200 ? '' : await res.text() }).toEqual({ status: 200, body: '' });
  const signed = (await res.json()) as SignAnswer;
  const download = await stack.request(`/v1/assets/${signed.asset_id}/content`, { key: tenant.api_key });
  expect(download.status).toBe(200);
  return { signed, signedBytes: Buffer.from(await download.arrayBuffer()) };
}

async function verify(bytes: Buffer): Promise<{ status: string; warnings: string[] }> {
  const res = await stack.request('/v1/verify', {
    method: 'POST',
    body: multipart({}, { field: 'file', bytes, name: 'x' }),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as { status: string; warnings: string[] };
}

/**
 * The promise a sign makes: a watermark_id means its own output verifies with the watermark matching; no
 * watermark_id means the watermark_not_embedded warning with a reason, and a manifest that claims no watermark.
 */
async function expectHonestSign(bytes: Buffer, name: string, recipe?: string): Promise<SignAnswer> {
  const { signed, signedBytes } = await sign(bytes, name, recipe);
  const verdict = await verify(signedBytes);
  if (signed.watermark_id) {
    expect(signed.warnings).toBeUndefined();
    expect(verdict.status).toBe('verified_manifest_and_watermark_match');
  } else {
    expect(signed.warnings).toEqual(['watermark_not_embedded']);
    expect(signed.watermark_not_embedded_reason).toEqual(expect.any(String));
    expect(verdict.status).toBe('verified_manifest');
    expect(verdict.warnings).not.toContain('watermark_not_found');
  }
  return signed;
}

/** A 512×512 grayscale grass-like texture (blades: streaks with noise), upscaled to 1152×864, grayscale JPEG. */
async function grassTexture(seed: number): Promise<Buffer> {
  let state = seed >>> 0;
  const random = () => (state = (state * 1664525 + 1013904223) >>> 0) / 2 ** 32;
  const side = 512;
  const plane = Buffer.alloc(side * side);
  const phase = Array.from({ length: side }, () => random() * 6.28);
  for (let y = 0; y < side; y++)
    for (let x = 0; x < side; x++) {
      const blade = 30 * Math.sin(x * (0.8 + 0.2 * random()) + phase[x]! + Math.sin(y * 0.05) * 3);
      plane[y * side + x] = Math.max(0, Math.min(255, Math.round(110 + blade + 40 * (random() - 0.5))));
    }
  return sharp(plane, { raw: { width: side, height: side, channels: 1 } })
    .blur(0.8)
    .resize(1152, 864, { fit: 'fill' })
    .jpeg({ quality: 90 })
    .toBuffer();
}

/** A WAV as a file holds it: ffmpeg writing to a pipe cannot go back to fill in the RIFF and data sizes. */
function withSizes(wav: Buffer): Buffer {
  const out = Buffer.from(wav);
  out.writeUInt32LE(out.length - 8, 4);
  const data = out.indexOf('data', 12, 'latin1');
  out.writeUInt32LE(out.length - data - 8, data + 4);
  return out;
}

describe('read back before answering', () => {
  it('a grayscale grass texture upscaled to 1152×864: each sign either reads back or says it carries no mark', async () => {
    for (const seed of [1, 2, 3]) await expectHonestSign(await grassTexture(seed), `grass-${seed}.jpg`);
  }, 180_000);

  it('flat and smooth content (a plain colour, a near-plain colour, a smooth gradient) likewise', async () => {
    const width = 1024;
    const height = 768;
    const plain = await sharp({ create: { width, height, channels: 3, background: { r: 200, g: 200, b: 200 } } })
      .png()
      .toBuffer();
    const gradient = Buffer.alloc(width * height * 3);
    for (let y = 0; y < height; y++)
      for (let x = 0; x < width; x++)
        gradient.fill(Math.round(40 + (170 * x) / width), (y * width + x) * 3, (y * width + x) * 3 + 3);
    const nearPlain = Buffer.alloc(width * height * 3);
    for (let i = 0; i < width * height; i++) nearPlain.fill(128 + (i % 3) - 1, i * 3, i * 3 + 3);
    await expectHonestSign(plain, 'plain.png');
    await expectHonestSign(
      await sharp(gradient, { raw: { width, height, channels: 3 } })
        .jpeg({ quality: 90 })
        .toBuffer(),
      'gradient.jpg',
    );
    await expectHonestSign(
      await sharp(nearPlain, { raw: { width, height, channels: 3 } })
        .png()
        .toBuffer(),
      'near-plain.png',
    );
  }, 180_000);

  it('a signed photo signed again: the new mark, embedded over the old one, reads back under the new watermark_id', async () => {
    const photo = await sharp(await readFile(`${SHARED_DIR}/fixtures/photos/chelsea.png`))
      .resize(1024, 768, { fit: 'fill' })
      .jpeg({ quality: 90 })
      .toBuffer();
    const first = await sign(photo, 'photo.jpg');
    expect(first.signed.watermark_id).toMatch(/^w_/);
    const again = await expectHonestSign(first.signedBytes, 'photo-again.jpg');
    // Level 0 over an old mark of the same key does not read; a stronger level does (measured), so a mark is kept.
    expect(again.watermark_id).toMatch(/^w_/);
    expect(again.watermark_id).not.toBe(first.signed.watermark_id);
  }, 180_000);

  it('a fully transparent WebP carries no mark: no watermark_id, the warning and its reason, and the audit entry says so', async () => {
    const transparent = await sharp(await readFile(`${SHARED_DIR}/fixtures/photos/coffee.png`))
      .resize(800, 600, { fit: 'fill' })
      .removeAlpha()
      .ensureAlpha(0)
      .webp({ quality: 90 })
      .toBuffer();
    const signed = await expectHonestSign(transparent, 'clear.webp');
    expect(signed.watermark_id).toBeUndefined();
    expect(signed.watermark_not_embedded_reason).toMatch(/transparent/);
    // (expectHonestSign: its verify says verified_manifest without watermark_not_found, so the manifest names no mark.)
    let entry: { data: Record<string, unknown> } | undefined;
    for (let i = 0; i < 200 && !entry; i++) {
      const res = await stack.request('/v1/audit?event_type=asset.signed&limit=1000', { key: tenant.api_key });
      expect(res.status).toBe(200);
      const { entries } = (await res.json()) as { entries: Array<{ data: Record<string, unknown> }> };
      entry = entries.find((e) => e.data.asset_id === signed.asset_id);
      if (!entry) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(entry?.data).toMatchObject({
      watermark_id: null,
      watermark_not_embedded: expect.stringMatching(/transparent/),
    });
  }, 180_000);

  it('audio: a 12 s recording keeps its mark; a 1 s clip, too short to read, is signed without one and says so', async () => {
    const long = await expectHonestSign(await recording('music', 12, 2), 'music.wav', 'audio-genai-v1');
    expect(long.watermark_id).toMatch(/^w_/);
    const short = await expectHonestSign(withSizes(await recording('speech', 1, 1)), 'short.wav', 'audio-genai-v1');
    expect(short.watermark_id).toBeUndefined();
    expect(short.watermark_not_embedded_reason).toMatch(/too short/);
  }, 180_000);
});
