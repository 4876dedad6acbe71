import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import sharp from 'sharp';
import { createKeyedImageWatermark } from '../services/watermark/src/domain/image/cairn-dct-keyed-v1.js';
import { createImageWatermark } from '../services/watermark/src/domain/image/cairn-dct-v1.js';
import { SyncTileWatermark } from '../services/watermark/src/domain/image/cairn-sync-v2.js';
import { watermarkBindingOf } from './support/soft-binding.js';
import { onboard, signAndFetch, startStack, type Stack, verifyUpload } from './support/stack.js';
import { SHARED_DIR } from '../packages/testing/src/shared.js';

const PHOTOS = `${SHARED_DIR}/fixtures/photos`;
let stack: Stack;
let victim: { asset_id: string; manifest_id: string };
let signedBytes: Buffer;
let payload: Uint8Array;

interface Verification {
  status: string;
  asset_id?: string;
  warnings: string[];
  matches: Array<{ asset_id?: string; via?: string }>;
}

const verifyFile = (bytes: Buffer): Promise<Verification> => verifyUpload<Verification>(stack, bytes, 'x.jpg');

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
  ({ signed: victim, signedBytes } = await signAndFetch<typeof victim>(stack, tenant.api_key, {
    recipe: 'image-genai-v1',
    metadata: { generator: 'ImageGen', model: 'v3' },
    bytes: photo,
    name: 'a.jpg',
  }));
  // The victim's payload is public: its manifest names it.
  const binding = watermarkBindingOf(
    Buffer.from(await (await stack.request(`/v1/manifests/${victim.manifest_id}`)).arrayBuffer()),
  );
  expect(binding.alg).toBe('cairn-sync-v2');
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

  it.each([
    ['coffee.png', 'cairn-sync-v2'],
    ['chelsea.png', 'cairn-sync-v2'],
    ['coffee.png', 'cairn-dct-keyed-v1'],
    ['chelsea.png', 'cairn-dct-keyed-v1'],
  ])(
    'the victim’s payload stamped into %s with the published %s code and a wrong key names no asset',
    async (file, algorithm) => {
      const wrongKey = Uint8Array.from(randomBytes(32));
      const code =
        algorithm === 'cairn-sync-v2' ? new SyncTileWatermark(wrongKey) : createKeyedImageWatermark(wrongKey);
      const forged = code.embed(await pixelsOf(file), payload);
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

/**
 * What a client does to a photo it received: everything through sharp, on the signed file as downloaded. The
 * photo is about one megapixel, as a typical upload.
 */
describe('cairn-sync-v2 through HTTP: crops and rotations', () => {
  let tenantKey: string;
  let original: Buffer;
  let signed: { asset_id: string; bytes: Buffer };

  beforeAll(async () => {
    tenantKey = (await onboard(stack)).api_key;
    original = await sharp(await readFile(`${PHOTOS}/chelsea.png`))
      .resize(1225, 816)
      .jpeg({ quality: 92 })
      .toBuffer();
    const { signed: cat, signedBytes } = await signAndFetch(stack, tenantKey, {
      recipe: 'image-genai-v1',
      metadata: { generator: 'ImageGen', model: 'v3' },
      bytes: original,
      name: 'cat.jpg',
    });
    signed = { asset_id: cat.asset_id, bytes: signedBytes };
  }, 120_000);

  /** Rotates by `degrees` and keeps the centre without the filled corners, then re-encodes as JPEG q85. */
  async function cropAndRotate(bytes: Buffer, degrees: number): Promise<Buffer> {
    const { width = 0, height = 0 } = await sharp(bytes).metadata();
    // 10 % off the left first (the manifest goes with the re-encode).
    const cropped = await sharp(bytes)
      .extract({ left: Math.round(width * 0.1), top: 0, width: width - Math.round(width * 0.1), height })
      .toBuffer();
    const rotated = await sharp(cropped).rotate(degrees).toBuffer({ resolveWithObject: true });
    const keep = 0.85;
    const w = Math.floor(rotated.info.width * keep);
    const h = Math.floor(rotated.info.height * keep);
    return sharp(rotated.data)
      .extract({
        left: Math.floor((rotated.info.width - w) / 2),
        top: Math.floor((rotated.info.height - h) / 2),
        width: w,
        height: h,
      })
      .jpeg({ quality: 85 })
      .toBuffer();
  }

  it.each([3, -3])(
    'cropped 10%% and rotated %d°, the stripped copy verifies watermark_only naming its asset',
    async (degrees) => {
      const result = await verifyFile(await cropAndRotate(signed.bytes, degrees));
      expect(result.status).toBe('watermark_only');
      expect(result.warnings).not.toContain('watermark_content_mismatch');
      expect(result.matches[0]).toMatchObject({ asset_id: signed.asset_id, via: 'watermark' });
    },
  );

  it('after the social path (0.5×, 5% off-centre crop, JPEG q50) it verifies watermark_only naming its asset', async () => {
    const half = await sharp(signed.bytes).resize(613, 408).toBuffer();
    const shared = await sharp(half)
      .extract({ left: 9, top: 14, width: 613 - 31, height: 408 - 20 })
      .jpeg({ quality: 50 })
      .toBuffer();
    const result = await verifyFile(shared);
    expect(result.status).toBe('watermark_only');
    expect(result.matches[0]).toMatchObject({ asset_id: signed.asset_id, via: 'watermark' });
  });

  it('the mark lifted from the signed file and added to an unrelated photo names no asset', async () => {
    // The attacker holds the original and the signed file: their difference is the mark (and JPEG noise), laid
    // onto another photo of the same size.
    const raw = (bytes: Buffer) => sharp(bytes).removeAlpha().raw().toBuffer({ resolveWithObject: true });
    const [before, after] = await Promise.all([raw(original), raw(signed.bytes)]);
    const other = await sharp(await readFile(`${PHOTOS}/coffee.png`))
      .resize(after.info.width, after.info.height, { fit: 'fill' })
      .removeAlpha()
      .raw()
      .toBuffer();
    const forged = Buffer.alloc(other.length);
    for (let i = 0; i < other.length; i++)
      forged[i] = Math.max(0, Math.min(255, other[i]! + after.data[i]! - before.data[i]!));
    const bytes = await sharp(forged, { raw: { width: after.info.width, height: after.info.height, channels: 3 } })
      .jpeg({ quality: 92 })
      .toBuffer();
    for (const copy of [bytes, await cropAndRotate(bytes, 3)]) {
      const result = await verifyFile(copy);
      // The mark is read (else this would prove nothing), but the content is not the asset's.
      expect(result.warnings).toContain('watermark_content_mismatch');
      expect(result.asset_id).toBeUndefined();
      expect(result.matches.map((m) => m.asset_id)).not.toContain(signed.asset_id);
      expect(JSON.stringify(result)).not.toContain(signed.asset_id);
    }
  });
});
