import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { runFfmpeg } from '@cairn/media';
import { clip, transcoded } from './support/video.js';
import { signAndFetch } from './support/stack.js';
import {
  clipUpload,
  expectConflict,
  expectWatermarkOnly,
  itSignsMarkedAndVerifies,
  signedForFile,
  verifyFile,
} from './support/watermark-fleet.js';

// 2 s of a moving test pattern with a tone, 1280×720 at 25 fps, H.264/AAC in MP4, made here with ffmpeg. A
// watermark-only lead is checked against the content's fingerprint: signedForFile waits until it is indexed.
const file = signedForFile(
  async () => clipUpload(await clip('testsrc2', { seconds: 2, width: 1280, height: 720, audio: true })),
  240_000,
);

/** Signs `bytes` under `recipe` and fetches the signed file (not waiting for its fingerprint: nothing looks it up). */
async function signVideo(bytes: Buffer, recipe: string): Promise<{ asset_id: string; bytes: Buffer }> {
  const again = await signAndFetch(file.stack, file.owner.api_key, { recipe, bytes, name: 'clip.mp4' });
  return { asset_id: again.signed.asset_id, bytes: again.signedBytes };
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

describe('video watermark through HTTP (video-genai-v1)', () => {
  itSignsMarkedAndVerifies(
    file,
    {
      title: 'signs an MP4 as MP4 whose frames carry the mark the manifest names (cairn-sync-v2 and its payload)',
      mediaType: 'video/mp4',
      alg: 'cairn-sync-v2',
    },
    60_000,
  );

  it('the same re-encoded with H.264 CRF 28 (manifest gone) verifies watermark_only, naming its asset', async () => {
    const copy = await transcoded(file.signedBytes, ['-c:v', 'libx264', '-crf', '28', '-c:a', 'aac', '-b:a', '96k']);
    const result = await verifyFile(file.stack, copy, 'copy.mp4');
    expectWatermarkOnly(result, file.signed.asset_id);
  }, 60_000);

  it('manifest_watermark_conflict: a video whose frames carry asset B’s mark, signed again as captured asset A', async () => {
    // B is the clip signed above. Its frames without its manifest: a remux drops the C2PA box, keeps every frame.
    const stripped = await remuxed(file.signedBytes);
    expect((await verifyFile(file.stack, stripped, 'stripped.mp4')).matches.map((m) => m.asset_id)).toContain(
      file.signed.asset_id,
    );
    // Signed as captured footage: a valid Cairn manifest of A, the frames (and so B's mark) left as they are.
    const a = await signVideo(stripped, 'video-capture-v1');
    expect(a.asset_id).not.toBe(file.signed.asset_id);
    const result = await verifyFile(file.stack, a.bytes, 'a.mp4');
    expect(result.signals).toMatchObject({ c2pa_manifest_present: true, c2pa_signature_valid: true });
    expectConflict(result, a.asset_id, file.signed.asset_id);
  }, 180_000);

  it('an unmarked clip of the same kind verifies no_provenance (the detector does not invent a mark)', async () => {
    const other = await clip('mandelbrot', { seconds: 2, width: 1280, height: 720 });
    const result = await verifyFile(file.stack, other, 'other.mp4');
    expect(result.status).toBe('no_provenance');
  }, 60_000);
});
