import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import sharp from 'sharp';
import { createKeyedImageWatermark } from '../services/watermark/src/domain/image/cairn-dct-keyed-v1.js';
import { createImageWatermark } from '../services/watermark/src/domain/image/cairn-dct-v1.js';
import { watermarkBindingOf } from './support/soft-binding.js';
import { multipart, onboard, startStack, type Stack } from './support/stack.js';
import { SHARED_DIR } from '../packages/testing/src/shared.js';

const PHOTOS = `${SHARED_DIR}/fixtures/photos`;
let stack: Stack;
let victim: { asset_id: string; manifest_id: string };
let signedBytes: Buffer;
let payload: Uint8Array;

interface Verification {
  status: string;
  matches: Array<{ asset_id?: string; via?: string }>;
}

async function verifyFile(bytes: Buffer): Promise<Verification> {
  const res = await stack.request('/v1/verify', {
    method: 'POST',
    body: multipart({}, { field: 'file', bytes, name: 'x.jpg' }),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as Verification;
}

/** A photo as raw RGB pixels, and back to a JPEG: what an attacker holding the published code works with. */
async function pixelsOf(file: string): Promise<{ pixels: Uint8Array; width: number; height: number; channels: 3 }> {
  const { data, info } = await sharp(await readFile(`${PHOTOS}/${file}`))
    .removeAlpha()
    .toColourspace('srgb')
    .raw()
    .toBuffer({ resolveWithObject: true });
  return { pixels: new Uint8Array(data), width: info.width, height: info.height, channels: 3 };
}
const jpeg = (image: { pixels: Uint8Array; width: number; height: number }) =>
  sharp(Buffer.from(image.pixels), { raw: { width: image.width, height: image.height, channels: 3 } })
    .jpeg({ quality: 90 })
    .toBuffer();

beforeAll(async () => {
  stack = await startStack(['watermark', 'signer', 'verifier', 'gateway'], { PUBLIC_VERIFY_PER_MINUTE: '1000' });
  const tenant = await onboard(stack);
  const photo = await sharp(await readFile(`${PHOTOS}/astronaut.png`))
    .jpeg({ quality: 90 })
    .toBuffer();
  const res = await stack.request('/v1/sign', {
    method: 'POST',
    key: tenant.api_key,
    headers: { 'idempotency-key': crypto.randomUUID() },
    body: multipart(
      { recipe: 'image-genai-v1', metadata: JSON.stringify({ generator: 'ImageGen', model: 'v3' }) },
      { field: 'asset', bytes: photo, name: 'a.jpg' },
    ),
  });
  expect(res.status).toBe(200);
  victim = (await res.json()) as typeof victim;
  signedBytes = Buffer.from(
    await (await stack.request(`/v1/assets/${victim.asset_id}/content`, { key: tenant.api_key })).arrayBuffer(),
  );
  // The victim's payload is public: its manifest names it.
  const binding = watermarkBindingOf(
    Buffer.from(await (await stack.request(`/v1/manifests/${victim.manifest_id}`)).arrayBuffer()),
  );
  expect(binding.alg).toBe('cairn-dct-keyed-v1');
  payload = Uint8Array.from(Buffer.from(binding.payloadHex, 'hex'));
}, 120_000);
afterAll(() => stack?.stop());

describe('keyed image watermark through HTTP', () => {
  it('a signed image stripped of its manifest (re-encoded) verifies watermark_only, naming the asset', async () => {
    const stripped = await sharp(signedBytes).jpeg({ quality: 85 }).toBuffer();
    const result = await verifyFile(stripped);
    expect(result.status).toBe('watermark_only');
    expect(result.matches[0]).toMatchObject({ asset_id: victim.asset_id, via: 'watermark' });
  });

  it.each(['coffee.png', 'chelsea.png'])(
    'the victim’s payload stamped into %s with the published code and a wrong key names no asset',
    async (file) => {
      const forged = createKeyedImageWatermark(Uint8Array.from(randomBytes(32))).embed(await pixelsOf(file), payload);
      const result = await verifyFile(await jpeg(forged));
      expect(result.status).not.toBe('watermark_only');
      expect(result.matches.map((m) => m.asset_id)).not.toContain(victim.asset_id);
    },
  );

  it('the victim’s payload stamped with the keyless cairn-dct-v1 code names no asset either', async () => {
    const forged = createImageWatermark().embed(await pixelsOf('coffee.png'), payload);
    const result = await verifyFile(await jpeg(forged));
    expect(result.status).not.toBe('watermark_only');
    expect(result.matches.map((m) => m.asset_id)).not.toContain(victim.asset_id);
  });
});
