import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { runFfmpeg, sniffMediaType } from '@cairn/media';
import { clip, transcoded } from './support/video.js';
import { watermarkBindingOf } from './support/soft-binding.js';
import { onboard, signAndFetch, startStack, type Stack } from './support/stack.js';
import { signAndIndex, verifyFile, type SignedAsset } from './support/watermark-fleet.js';

let stack: Stack;
let owner: { tenant_id: string; api_key: string };
let signed: SignedAsset;
let signedBytes: Buffer;

/** Signs `bytes` under `recipe` and fetches the signed file (not waiting for its fingerprint: nothing looks it up). */
async function signVideo(bytes: Buffer, recipe: string): Promise<{ asset_id: string; bytes: Buffer }> {
  const { signed, signedBytes } = await signAndFetch(stack, owner.api_key, { recipe, bytes, name: 'clip.mp4' });
  return { asset_id: signed.asset_id, bytes: signedBytes };
}

/** The same streams in a new MP4 (ffmpeg copies no C2PA box): the frames, and so their mark, bit for bit. */
async function remuxed(bytes: Buffer): Promise<Buffer> {
  const dir = await mkdtemp(join(tmpdir(), 'cairn-remux-'));
  try {
    const output = join(dir, 'remuxed.mp4');
    await runFfmpeg({
      args: ['-i', 'pipe:0', '-map', '0', '-c', 'copy', '-movflags', '+faststart', '-y', output],
      input: bytes,
      timeoutMs: 60_000,
    });
    return await readFile(output);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

beforeAll(async () => {
  stack = await startStack(['watermark', 'signer', 'verifier', 'softbinding', 'gateway'], {
    PUBLIC_VERIFY_PER_MINUTE: '1000',
  });
  owner = await onboard(stack);
  // 2 s of a moving test pattern with a tone, 1280×720 at 25 fps, H.264/AAC in MP4, made here with ffmpeg. A
  // watermark-only lead is checked against the content's fingerprint: signAndIndex waits until it is indexed.
  ({ signed, signedBytes } = await signAndIndex(stack, owner.api_key, {
    recipe: 'video-genai-v1',
    metadata: { generator: 'ClipGen', model: 'v1' },
    bytes: await clip('testsrc2', { seconds: 2, width: 1280, height: 720, audio: true }),
    name: 'clip.mp4',
  }));
}, 240_000);
afterAll(() => stack?.stop());

describe('video watermark through HTTP (video-genai-v1)', () => {
  it('signs an MP4 as MP4 whose frames carry the mark the manifest names (cairn-sync-v2 and its payload)', async () => {
    expect(signed.media_type).toBe('video/mp4');
    expect(signed.watermark_id).toMatch(/^w_/);
    expect(sniffMediaType(signedBytes)?.mediaType).toBe('video/mp4');
    const binding = watermarkBindingOf(
      Buffer.from(await (await stack.request(`/v1/manifests/${signed.manifest_id}`)).arrayBuffer()),
    );
    expect(binding.alg).toBe('cairn-sync-v2');
    expect(binding.payloadHex).toMatch(/^[0-9a-f]{16}$/);
  });

  it('the signed file verifies verified_manifest_and_watermark_match', async () => {
    const result = await verifyFile(stack, signedBytes, 'clip.mp4');
    expect(result.signals).toMatchObject({ c2pa_manifest_present: true, c2pa_signature_valid: true });
    expect(result.status).toBe('verified_manifest_and_watermark_match');
  }, 60_000);

  it('the same re-encoded with H.264 CRF 28 (manifest gone) verifies watermark_only, naming its asset', async () => {
    const copy = await transcoded(signedBytes, ['-c:v', 'libx264', '-crf', '28', '-c:a', 'aac', '-b:a', '96k']);
    const result = await verifyFile(stack, copy, 'copy.mp4');
    expect(result.signals.c2pa_manifest_present).toBe(false);
    expect(result.status).toBe('watermark_only');
    expect(result.matches[0]).toMatchObject({ asset_id: signed.asset_id, via: 'watermark' });
  }, 60_000);

  it('manifest_watermark_conflict: a video whose frames carry asset B’s mark, signed again as captured asset A', async () => {
    // B is the clip signed above. Its frames without its manifest: a remux drops the C2PA box, keeps every frame.
    const stripped = await remuxed(signedBytes);
    expect((await verifyFile(stack, stripped, 'stripped.mp4')).matches.map((m) => m.asset_id)).toContain(
      signed.asset_id,
    );
    // Signed as captured footage: a valid Cairn manifest of A, the frames (and so B's mark) left as they are.
    const a = await signVideo(stripped, 'video-capture-v1');
    expect(a.asset_id).not.toBe(signed.asset_id);
    const result = await verifyFile(stack, a.bytes, 'a.mp4');
    expect(result.signals).toMatchObject({ c2pa_manifest_present: true, c2pa_signature_valid: true });
    expect(result.status).toBe('manifest_watermark_conflict');
    expect(result.asset_id).toBe(a.asset_id);
    expect(result.developer_explanation).toContain(signed.asset_id);
    expect(result.confidence).toBeLessThanOrEqual(0.35);
  }, 180_000);

  it('an unmarked clip of the same kind verifies no_provenance (the detector does not invent a mark)', async () => {
    const other = await clip('mandelbrot', { seconds: 2, width: 1280, height: 720 });
    const result = await verifyFile(stack, other, 'other.mp4');
    expect(result.status).toBe('no_provenance');
  }, 60_000);
});
