import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { SHARED_DIR } from '@cairn/testing';
import { transcoded } from './support/video.js';
import { cameraClip, STEADY_HAND, transplanted } from './support/camera-clip.js';
import { onboard, startStack, type Stack } from './support/stack.js';
import { signAndIndex, verifyFile, type SignedAsset } from './support/watermark-fleet.js';

// A video watermark's lead names an asset only when the file also shows that asset's content (a mark can be lifted
// and laid onto other content). The check must tell an honest re-encoded copy from such a transplant.

const PHOTOS = `${SHARED_DIR}/fixtures/photos`;
let stack: Stack;
let original: Buffer;
let signed: SignedAsset;
let signedBytes: Buffer;

beforeAll(async () => {
  stack = await startStack(['watermark', 'signer', 'verifier', 'softbinding', 'gateway'], {
    PUBLIC_VERIFY_PER_MINUTE: '1000',
  });
  const owner = await onboard(stack);
  // A handheld shot of a real photograph (camera-like: pan, jitter, per-frame noise, exposure drift), 960×540.
  original = await cameraClip([`${PHOTOS}/chelsea.png`], { motion: STEADY_HAND, seed: 5, secondsEach: 4 });
  ({ signed, signedBytes } = await signAndIndex(stack, owner.api_key, {
    recipe: 'video-genai-v1',
    metadata: { generator: 'ClipGen', model: 'v1' },
    bytes: original,
    name: 'clip.mp4',
  }));
}, 600_000);
afterAll(() => stack?.stop());

describe('the watermark content check on video: re-encodes are the asset, transplants are not', () => {
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
      const result = await verifyFile(stack, copy, name.includes('WebM') ? 'copy.webm' : 'copy.mp4');
      expect(result.signals.c2pa_manifest_present).toBe(false);
      expect(result.warnings).not.toContain('watermark_content_mismatch');
      expect(result.status).toBe('watermark_only');
      expect(result.asset_id).toBe(signed.asset_id);
      expect(result.matches[0]).toMatchObject({ asset_id: signed.asset_id, via: 'watermark' });
    },
    180_000,
  );

  it('the mark lifted from the signed clip and laid onto a clip of another photo (same motion) names no asset', async () => {
    const host = await cameraClip([`${PHOTOS}/coffee.png`], { motion: STEADY_HAND, seed: 5, secondsEach: 4 });
    const forged = await transplanted(original, signedBytes, host);
    const result = await verifyFile(stack, forged, 'forged.mp4');
    // The mark is read and registered (else this would prove nothing), but the content is not the asset's.
    expect(result.warnings).toContain('watermark_content_mismatch');
    expect(result.asset_id).toBeUndefined();
    expect(result.matches.map((m) => m.asset_id)).not.toContain(signed.asset_id);
    expect(JSON.stringify(result)).not.toContain(signed.asset_id);
  }, 300_000);
});
