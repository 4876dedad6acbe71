import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { SHARED_DIR } from '@cairn/testing';
import sharp from 'sharp';
import { transcoded } from './support/video.js';
import { cameraClip, QUICK_HAND, STEADY_HAND, transplanted } from './support/camera-clip.js';
import { onboard, startStack, type Stack } from './support/stack.js';
import {
  expectHonestCopy,
  expectTransplantRefused,
  signAndIndex,
  verifyFile,
  type SignedAsset,
} from './support/watermark-fleet.js';

// A watermark's lead names an asset only when the file also shows that asset's content (a mark can be lifted and
// laid onto other content). The check must tell an honest re-encoded copy from such a transplant: a video's frames
// (soft-binding) or its first second registered through the mark's geometry, an image's luma registered so (the
// watermark service).

const PHOTOS = `${SHARED_DIR}/fixtures/photos`;
let stack: Stack;
let apiKey: string;
let original: Buffer;
let signed: SignedAsset;
let signedBytes: Buffer;

beforeAll(async () => {
  stack = await startStack(['watermark', 'signer', 'verifier', 'softbinding', 'gateway'], {
    PUBLIC_VERIFY_PER_MINUTE: '1000',
    // The noisy low-texture clip below is over the default 5 MiB: signed and verified while the test waits, not as jobs.
    SYNC_SIGN_MAX_BYTES: String(32 << 20),
    SYNC_VERIFY_MAX_BYTES: String(32 << 20),
  });
  apiKey = (await onboard(stack)).api_key;
}, 600_000);
afterAll(() => stack?.stop());

describe('the watermark content check on video: re-encodes are the asset, transplants are not', () => {
  beforeAll(async () => {
    // A handheld shot of a real photograph (camera-like: pan, jitter, per-frame noise, exposure drift), 960×540.
    original = await cameraClip([`${PHOTOS}/chelsea.png`], { motion: STEADY_HAND, seed: 5, secondsEach: 4 });
    ({ signed, signedBytes } = await signAndIndex(stack, apiKey, {
      recipe: 'video-genai-v1',
      metadata: { generator: 'ClipGen', model: 'v1' },
      bytes: original,
      name: 'clip.mp4',
    }));
  }, 600_000);

  it.each([
    ['H.264 CRF 28', ['-c:v', 'libx264', '-crf', '28']],
    ['scaled to 0.5×', ['-vf', 'scale=480:270', '-c:v', 'libx264', '-crf', '23']],
    ['cropped 10 %', ['-vf', 'crop=864:486', '-c:v', 'libx264', '-crf', '23']],
    ['at 24 fps', ['-r', '24', '-c:v', 'libx264', '-crf', '23']],
    [
      'as VP9 WebM',
      ['-c:v', 'libvpx-vp9', '-crf', '34', '-b:v', '0', '-deadline', 'realtime', '-cpu-used', '8', '-f', 'webm'],
    ],
  ])(
    'a copy %s (no manifest) verifies watermark_only naming the asset, no watermark_content_mismatch',
    async (name, args) => {
      const copy = await transcoded(signedBytes, args);
      expectHonestCopy(
        await verifyFile(stack, copy, name.includes('WebM') ? 'copy.webm' : 'copy.mp4'),
        signed.asset_id,
      );
    },
    180_000,
  );

  it('the mark lifted from the signed clip and laid onto a clip of another photo (same motion) names no asset', async () => {
    const host = await cameraClip([`${PHOTOS}/coffee.png`], { motion: STEADY_HAND, seed: 5, secondsEach: 4 });
    const forged = await transplanted(original, signedBytes, host);
    // The mark is read and registered (else this would prove nothing), but the content is not the asset's.
    expectTransplantRefused(await verifyFile(stack, forged, 'forged.mp4'), signed.asset_id);
  }, 300_000);
});

describe('the watermark content check on low-texture video: through the geometry the mark is read under', () => {
  let ribbons: { signed: SignedAsset; signedBytes: Buffer };

  beforeAll(async () => {
    // Blurred ribbons (c2pa-rs XCA.jpg) under a quick hand, with a cut between two framings: frames whose
    // fingerprints a 10 % crop moves out of reach (soft-binding's content check finds none of them), so only the
    // copy's first second registered back onto the embedding grid can show it is the asset.
    const xca = `${SHARED_DIR}/fixtures/c2pa-rs/XCA.jpg`;
    const clip = await cameraClip([xca, xca], { motion: QUICK_HAND, seed: 15, secondsEach: 3 });
    ribbons = await signAndIndex(stack, apiKey, {
      recipe: 'video-genai-v1',
      metadata: { generator: 'ClipGen', model: 'v1' },
      bytes: clip,
      name: 'ribbons.mp4',
    });
  }, 600_000);

  it.each([
    ['cropped 10 % (central)', ['-vf', 'crop=864:486', '-c:v', 'libx264', '-crf', '23']],
    ['cropped 10 % off two sides', ['-vf', 'crop=864:486:0:0', '-c:v', 'libx264', '-crf', '23']],
  ])(
    'a copy %s (no manifest) names the asset, no watermark_content_mismatch',
    async (name, args) => {
      const copy = await transcoded(ribbons.signedBytes, args);
      expectHonestCopy(await verifyFile(stack, copy, 'copy.mp4'), ribbons.signed.asset_id);
    },
    180_000,
  );
});

/** Grey pixels as a PNG. */
const greyPng = (width: number, height: number, value: (i: number) => number) =>
  sharp(Buffer.from(Uint8Array.from({ length: width * height }, (_, i) => value(i))), {
    raw: { width, height, channels: 1 },
  })
    .toColourspace('srgb')
    .png()
    .toBuffer();

/** Pixels as raw sRGB bytes (what the mark is lifted from and laid onto). */
const rawOf = (bytes: Buffer) => sharp(bytes).removeAlpha().toColourspace('srgb').raw().toBuffer();

describe('the watermark content check on images: plain and finely textured content', () => {
  let plain: { signed: SignedAsset; original: Buffer; signedBytes: Buffer };
  let grain: { signed: SignedAsset; signedBytes: Buffer };

  beforeAll(async () => {
    // A plain grey picture (its descriptor has no variance to correlate), and a fine grain (noise upscaled 4×: its
    // detail is the size of a descriptor cell, so a crop's few tenths of a sample of misregistration lower the
    // correlation of an honest copy well below the photo line).
    const original = await greyPng(1024, 768, (i) => 150 + ((i * 5 + Math.floor(i / 1024) * 3) % 3) - 1);
    let seed = 12345;
    const noise = await greyPng(256, 256, () => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return 103 + ((seed >> 16) % 50);
    });
    const grainy = await sharp(noise).resize(1024, 1024, { kernel: 'linear' }).png().toBuffer();
    const sign = (bytes: Buffer, name: string) =>
      signAndIndex(stack, apiKey, {
        recipe: 'image-genai-v1',
        metadata: { generator: 'ImageGen', model: 'v3' },
        bytes,
        name,
      });
    plain = { ...(await sign(original, 'plain.png')), original };
    grain = await sign(grainy, 'grain.png');
    // Read back by the signer, so a mark is there to be checked (else nothing below would prove anything).
    expect(plain.signed.watermark_id).toBeTruthy();
    expect(grain.signed.watermark_id).toBeTruthy();
  }, 600_000);

  it('a JPEG copy of a signed plain grey picture (no manifest) names the asset, no watermark_content_mismatch', async () => {
    const copy = await sharp(plain.signedBytes).jpeg({ quality: 80 }).toBuffer();
    expectHonestCopy(await verifyFile(stack, copy, 'plain.jpg'), plain.signed.asset_id);
  }, 120_000);

  it('the plain picture’s mark laid onto a photo names no asset', async () => {
    const [before, after] = await Promise.all([rawOf(plain.original), rawOf(plain.signedBytes)]);
    const host = await sharp(await readFile(`${PHOTOS}/astronaut.png`))
      .resize(1024, 768, { fit: 'fill' })
      .removeAlpha()
      .raw()
      .toBuffer();
    const forged = Buffer.alloc(host.length);
    for (let i = 0; i < host.length; i++) forged[i] = Math.max(0, Math.min(255, host[i]! + after[i]! - before[i]!));
    const bytes = await sharp(forged, { raw: { width: 1024, height: 768, channels: 3 } })
      .png()
      .toBuffer();
    // The mark is read and registered, but the content is not the asset's.
    expectTransplantRefused(await verifyFile(stack, bytes, 'forged.png'), plain.signed.asset_id);
  }, 120_000);

  /** A fixture photograph at 1152×864, signed as a JPEG; the signed file. */
  const signedPhoto = async (name: string) => {
    const photo = await sharp(await readFile(`${PHOTOS}/${name}.png`))
      .resize(1152, 864, { fit: 'fill' })
      .removeAlpha()
      .toColourspace('srgb')
      .jpeg({ quality: 90 })
      .toBuffer();
    const asset = await signAndIndex(stack, apiKey, {
      recipe: 'image-genai-v1',
      metadata: { generator: 'ImageGen', model: 'v3' },
      bytes: photo,
      name: `${name}.jpg`,
    });
    expect(asset.signed.watermark_id).toBeTruthy();
    return asset;
  };
  /** A dark patch `width`×`height` in the bottom-right corner, then JPEG q85. */
  const overlaid = async (bytes: Buffer, width: number, height: number) => {
    const patch = await sharp({ create: { width, height, channels: 3, background: { r: 10, g: 10, b: 10 } } })
      .png()
      .toBuffer();
    return sharp(bytes)
      .composite([{ input: patch, left: 1152 - width, top: 864 - height }])
      .jpeg({ quality: 85 })
      .toBuffer();
  };

  it('a photo under a caption bar over a fifth of its height (no manifest) names the asset', async () => {
    // The bar pulls the whole picture's correlation with the asset's luma map to about 0.35; the rest still follows
    // it, and the copy's fingerprints are beyond the lookup radius, so only the watermark service can name it.
    const { signed: asset, signedBytes } = await signedPhoto('chelsea');
    const copy = await overlaid(signedBytes, 1152, 173);
    expectHonestCopy(await verifyFile(stack, copy, 'chelsea-caption.jpg'), asset.asset_id);
  }, 180_000);

  it('a photo with a logo over its sky (no manifest) names the asset', async () => {
    // The cameraman's wide, smooth sky correlates with itself off its place as well as in it: with a dark patch in a
    // corner the whole picture's check says no (r ≈ 0.9). The rest of it follows the map, and the copy's
    // fingerprints are well within the lookup radius of the asset's.
    const { signed: asset, signedBytes } = await signedPhoto('camera');
    const copy = await overlaid(signedBytes, 259, 173);
    expectHonestCopy(await verifyFile(stack, copy, 'camera-logo.jpg'), asset.asset_id);
  }, 180_000);

  it('a finely textured picture cropped 10 % off one side (no manifest) names the asset', async () => {
    const copy = await sharp(grain.signedBytes)
      .extract({ left: 102, top: 0, width: 922, height: 1024 })
      .png()
      .toBuffer();
    expectHonestCopy(await verifyFile(stack, copy, 'grain.png'), grain.signed.asset_id);
  }, 120_000);
});
