import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { runFfmpeg } from '@cairn/media';
import { recording, withSoundtrack } from './support/audio.js';
import { clip } from './support/video.js';
import { lookupFile, matchesOf } from './support/lookup.js';
import { onboard, startStack, type Stack } from './support/stack.js';
import { signAndIndex, verifyFile, type SignedAsset } from './support/watermark-fleet.js';

let stack: Stack;
let owner: { tenant_id: string; api_key: string };
let other: { tenant_id: string; api_key: string };
let signed: SignedAsset;
let signedBytes: Buffer;
let dir: string;

/** The sound of the signed video alone, as someone would take it out: `ffmpeg -i signed.mp4 -vn <args> out.<ext>`. */
async function soundOf(args: string[], ext: string): Promise<Buffer> {
  const out = join(dir, `sound.${ext}`);
  await runFfmpeg({ args: ['-y', '-i', join(dir, 'signed.mp4'), '-vn', ...args, out], timeoutMs: 60_000 });
  return readFile(out);
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cairn-video-sound-'));
  stack = await startStack(['watermark', 'signer', 'verifier', 'softbinding', 'gateway'], {
    PUBLIC_VERIFY_PER_MINUTE: '1000',
  });
  owner = await onboard(stack);
  other = await onboard(stack);
  // 8 s of a moving test pattern with speech-like sound (AAC), small: the frames are not what is looked up here.
  const upload = await withSoundtrack(
    await clip('testsrc2', { seconds: 8, width: 320, height: 180 }),
    await recording('speech', 8, 1),
  );
  // Waits until the frames are indexed: the sound is indexed in the same transaction.
  ({ signed, signedBytes } = await signAndIndex(stack, owner.api_key, {
    recipe: 'video-genai-v1',
    metadata: { generator: 'ClipGen', model: 'v1' },
    bytes: upload,
    name: 'clip.mp4',
  }));
  await writeFile(join(dir, 'signed.mp4'), signedBytes);
}, 300_000);
afterAll(async () => {
  await stack?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('the sound of a signed video is indexed as audio of the same asset', () => {
  it.each([
    ['MP3 64k', ['-c:a', 'libmp3lame', '-b:a', '64k'], 'mp3'],
    ['WAV', ['-c:a', 'pcm_s16le'], 'wav'],
    ['AAC in M4A', ['-c:a', 'aac', '-b:a', '96k'], 'm4a'],
  ])(
    'the sound taken out as %s is found by the audio fingerprint, for its tenant only',
    async (_name, args, ext) => {
      const sound = await soundOf(args, ext);
      const matches = await matchesOf(await lookupFile(stack, owner.api_key, { bytes: sound, name: `q.${ext}` }));
      expect(matches).toHaveLength(1);
      expect(matches[0]).toMatchObject({ asset_id: signed.asset_id, alg: 'cairn.audio-peaks.v1' });
      expect(await matchesOf(await lookupFile(stack, other.api_key, { bytes: sound, name: `q.${ext}` }))).toEqual([]);
    },
    60_000,
  );

  it('verifying the sound as MP3 64k names the video: its content is the asset’s, not a copied mark', async () => {
    const result = await verifyFile(stack, await soundOf(['-c:a', 'libmp3lame', '-b:a', '64k'], 'mp3'), 'sound.mp3');
    expect(result.signals.c2pa_manifest_present).toBe(false);
    // The sound carries the video's audio mark; the verifier names the asset only when the content also looks like
    // it, which for audio is this fingerprint (without it: watermark_content_mismatch, and no match).
    expect(result.warnings).not.toContain('watermark_content_mismatch');
    expect(result.status).toBe('watermark_only');
    expect(result.matches[0]).toMatchObject({ asset_id: signed.asset_id, via: 'watermark' });
  }, 60_000);
});
