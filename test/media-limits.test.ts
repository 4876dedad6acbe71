import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import sharp from 'sharp';
import { multipart, onboard, startStack, type Stack, postSign } from './support/stack.js';
import { SHARED_DIR } from '../packages/testing/src/shared.js';

/**
 * Decompression bombs are refused from their headers (cairn.media.too_large, 422) by every
 * path that decodes uploads, before anything is allocated. The stack runs in this process, so this process's
 * peak resident memory bounds every service's at once.
 */

const LIMIT_SIDE = 1024;
const MB = 1024 * 1024;
let stack: Stack;
let tenant: { tenant_id: string; api_key: string };
/** 10000×10000 of one colour: a few hundred KB of PNG that decodes to 300 MB of RGB. */
let bomb: Buffer;

function procStatus(field: 'VmRSS' | 'VmHWM'): number {
  const match = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync('/proc/self/status', 'utf8'));
  if (!match) throw new Error(`${field} missing from /proc/self/status`);
  return Number(match[1]) * 1024;
}

/** Runs `work` and answers how far resident memory peaked above where it started (VmHWM reset first). */
async function peakGrowth<T>(work: () => Promise<T>): Promise<{ result: T; growth: number }> {
  // "5" resets the peak (VmHWM) to the current resident size (Linux clear_refs).
  writeFileSync('/proc/self/clear_refs', '5');
  const before = procStatus('VmRSS');
  const result = await work();
  return { result, growth: procStatus('VmHWM') - before };
}

const problem = async (res: Response) => (await res.json()) as { code: string; status: number; detail: string };

/** A PCM WAV header: mono, 8 kHz, 8-bit (8000 bytes a second) claiming `seconds`, followed by one real second. */
function wavClaiming(seconds: number): Buffer {
  const header = Buffer.alloc(44);
  header.write('RIFF', 0, 'latin1');
  header.writeUInt32LE(36 + seconds * 8000, 4);
  header.write('WAVE', 8, 'latin1');
  header.write('fmt ', 12, 'latin1');
  header.writeUInt32LE(16, 16);
  header.writeUInt16LE(1, 20); // PCM
  header.writeUInt16LE(1, 22); // mono
  header.writeUInt32LE(8000, 24); // sample rate
  header.writeUInt32LE(8000, 28); // byte rate
  header.writeUInt16LE(1, 32); // block align
  header.writeUInt16LE(8, 34); // bits per sample
  header.write('data', 36, 'latin1');
  header.writeUInt32LE(seconds * 8000, 40);
  return Buffer.concat([header, Buffer.alloc(8000, 0x80)]);
}

beforeAll(async () => {
  // A low image limit, so an image at it is cheap to sign here (the default is 50 megapixels).
  stack = await startStack(['watermark', 'signer', 'verifier', 'softbinding', 'gateway'], {
    MEDIA_MAX_IMAGE_PIXELS: String(LIMIT_SIDE * LIMIT_SIDE),
  });
  tenant = await onboard(stack);
  bomb = await sharp({ create: { width: 10_000, height: 10_000, channels: 3, background: '#3a6ea5' } })
    .png({ compressionLevel: 9 })
    .toBuffer();
}, 180_000);
afterAll(() => stack?.stop());

const sign = (bytes: Buffer, recipe: string, name: string) => postSign(stack, tenant.api_key, { recipe, bytes, name });

describe('a 100-megapixel PNG bomb', () => {
  it('is a few hundred KB', () => {
    expect(bomb.length).toBeLessThan(1 * MB);
  });

  const routes: Array<[string, () => Promise<Response>]> = [
    [
      'public POST /v1/verify',
      () =>
        stack.request('/v1/verify', {
          method: 'POST',
          body: multipart({}, { field: 'file', bytes: bomb, name: 'b.png' }),
        }),
    ],
    ['POST /v1/sign', () => sign(bomb, 'image-genai-v1', 'b.png')],
    [
      'POST /c2pa/v1/matches/byContent',
      () =>
        stack.request('/c2pa/v1/matches/byContent', {
          method: 'POST',
          headers: { 'content-type': 'image/png' },
          body: bomb,
        }),
    ],
    [
      'POST /v1/lookup',
      () =>
        stack.request('/v1/lookup', {
          method: 'POST',
          key: tenant.api_key,
          body: multipart({}, { field: 'file', bytes: bomb, name: 'b.png' }),
        }),
    ],
  ];

  it.each(routes)(
    '%s: 422 cairn.media.too_large naming its size, resident memory up by less than 100 MB',
    async (_, send) => {
      const { result: res, growth } = await peakGrowth(send);
      expect(res.status).toBe(422);
      const body = await problem(res);
      expect(body.code).toBe('cairn.media.too_large');
      expect(body.detail).toContain('10000×10000');
      expect(growth).toBeLessThan(100 * MB);
    },
  );
});

describe('images at the limit', () => {
  let photo: Buffer;
  beforeAll(async () => {
    photo = await sharp(await readFile(`${SHARED_DIR}/fixtures/photos/astronaut.png`))
      .resize(LIMIT_SIDE, LIMIT_SIDE, { fit: 'fill' })
      .jpeg({ quality: 90 })
      .toBuffer();
  });

  it('an image of exactly MEDIA_MAX_IMAGE_PIXELS signs (watermarked) and verifies', async () => {
    const res = await sign(photo, 'image-genai-v1', 'a.jpg');
    expect(res.status).toBe(200);
    const signed = (await res.json()) as { asset_id: string; watermark_id: string };
    expect(signed.watermark_id).toMatch(/^w_/);
    const content = await stack.request(`/v1/assets/${signed.asset_id}/content`, { key: tenant.api_key });
    const bytes = Buffer.from(await content.arrayBuffer());
    expect(await sharp(bytes).metadata()).toMatchObject({ format: 'jpeg', width: LIMIT_SIDE, height: LIMIT_SIDE });
    const verified = await stack.request('/v1/verify', {
      method: 'POST',
      key: tenant.api_key,
      body: multipart({}, { field: 'file', bytes, name: 'a.jpg' }),
    });
    expect(((await verified.json()) as { status: string }).status).toBe('verified_manifest_and_watermark_match');
  });

  it('one row of pixels more is refused', async () => {
    const over = await sharp(photo)
      .resize(LIMIT_SIDE, LIMIT_SIDE + 1, { fit: 'fill' })
      .jpeg()
      .toBuffer();
    const res = await sign(over, 'image-genai-v1', 'b.jpg');
    expect(res.status).toBe(422);
    expect((await problem(res)).code).toBe('cairn.media.too_large');
  });
});

describe('a WAV header claiming ten hours', () => {
  const wav = wavClaiming(10 * 3600);

  it('is refused from its header by sign, verify and lookup (the file holds one second)', async () => {
    const answers = [
      await sign(wav, 'audio-genai-v1', 'long.wav'),
      await stack.request('/v1/verify', {
        method: 'POST',
        key: tenant.api_key,
        body: multipart({}, { field: 'file', bytes: wav, name: 'long.wav' }),
      }),
      await stack.request('/v1/lookup', {
        method: 'POST',
        key: tenant.api_key,
        body: multipart({}, { field: 'file', bytes: wav, name: 'long.wav' }),
      }),
    ];
    for (const res of answers) {
      expect(res.status).toBe(422);
      const body = await problem(res);
      expect(body.code).toBe('cairn.media.too_large');
      expect(body.detail).toContain('600 minutes');
    }
  });

  it('while the same header claiming what it holds gets past the limit (to the decoders)', async () => {
    const res = await stack.request('/v1/lookup', {
      method: 'POST',
      key: tenant.api_key,
      body: multipart({}, { field: 'file', bytes: wavClaiming(1), name: 'short.wav' }),
    });
    // One second of silence is too short to fingerprint: refused for that, not for its size.
    expect(res.status).toBe(400);
    expect((await problem(res)).code).not.toBe('cairn.media.too_large');
  });
});
