import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { runFfmpeg } from '@cairn/media';
import { recording, withSoundtrack } from './support/audio.js';
import { clip } from './support/video.js';
import { transplanted } from './support/camera-clip.js';
import { lookupFile, matchesOf } from './support/lookup.js';
import { onboard, type Stack } from './support/stack.js';
import {
  clipUpload,
  expectHonestCopy,
  expectTransplantRefused,
  signAndIndex,
  startWatermarkStack,
  verifyFile,
  type SignedAsset,
} from './support/watermark-fleet.js';

let stack: Stack;
let owner: { tenant_id: string; api_key: string };
let other: { tenant_id: string; api_key: string };
let signed: SignedAsset;
let signedBytes: Buffer;
/** The clip as uploaded (unmarked): what a mark is lifted against. */
let upload: Buffer;
let dir: string;

/** The sound of the signed video alone, as someone would take it out: `ffmpeg -i signed.mp4 -vn <args> out.<ext>`. */
async function soundOf(args: string[], ext: string): Promise<Buffer> {
  const out = join(dir, `sound.${ext}`);
  await runFfmpeg({ args: ['-y', '-i', join(dir, 'signed.mp4'), '-vn', ...args, out], timeoutMs: 60_000 });
  return readFile(out);
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cairn-video-sound-'));
  stack = await startWatermarkStack();
  owner = await onboard(stack);
  other = await onboard(stack);
  // 8 s of a moving test pattern with speech-like sound (AAC), small: the frames are not what is looked up here.
  upload = await withSoundtrack(
    await clip('testsrc2', { seconds: 8, width: 320, height: 180 }),
    await recording('speech', 8, 1),
  );
  // Waits until the frames are indexed: the sound is indexed in the same transaction.
  ({ signed, signedBytes } = await signAndIndex(stack, owner.api_key, clipUpload(upload)));
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

/** The signed video through ffmpeg: `args` between its input (0) and the output; input 1 is 8 s of other music. */
async function copyOf(args: string[]): Promise<Buffer> {
  const out = join(dir, 'copy.mp4');
  await writeFile(join(dir, 'music.wav'), await recording('music', 8, 1));
  const inputs = ['-i', join(dir, 'signed.mp4'), '-i', join(dir, 'music.wav')];
  await runFfmpeg({ args: ['-y', ...inputs, ...args, out], timeoutMs: 60_000 });
  return readFile(out);
}

const X264 = ['-c:v', 'libx264', '-crf', '23'];

describe('the content check hears the sound when the pictures no longer show the asset', () => {
  // Mirrored, cropped to a quarter of the picture or recoloured, the frames move beyond the frame check's radius
  // while a mark still reads: without the sound these honest copies were reported watermark_content_mismatch. The
  // quarter (160×90) is too small for the frame mark: its sound's mark names the asset, and only the sound can show
  // the content is the asset's. A mirrored copy's frames still carry the mark, whose geometry may show it too.
  it.each([
    ['mirrored', ['-vf', 'hflip', ...X264, '-c:a', 'copy']],
    ['cropped to its centre quarter', ['-vf', 'crop=160:90', ...X264, '-c:a', 'copy']],
    ['mirrored and recoloured', ['-vf', 'hflip,hue=h=90:s=1.5', ...X264, '-c:a', 'copy']],
  ])(
    'a copy %s with its own sound verifies watermark_only naming the asset',
    async (_name, args) => {
      expectHonestCopy(await verifyFile(stack, await copyOf(args), 'copy.mp4'), signed.asset_id);
    },
    120_000,
  );

  it('the mark lifted onto other pictures, with other sound, names no asset: the mark is read, the content is not the asset’s', async () => {
    const host = await clip('mandelbrot', { seconds: 8, width: 320, height: 180 });
    await writeFile(join(dir, 'forged.mp4'), await transplanted(upload, signedBytes, host));
    await writeFile(join(dir, 'music.wav'), await recording('music', 8, 1));
    const out = join(dir, 'forged-with-music.mp4');
    const inputs = ['-i', join(dir, 'forged.mp4'), '-i', join(dir, 'music.wav')];
    await runFfmpeg({
      args: ['-y', ...inputs, '-map', '0:v', '-map', '1:a', '-c:v', 'copy', '-c:a', 'aac', '-shortest', out],
      timeoutMs: 60_000,
    });
    expectTransplantRefused(await verifyFile(stack, await readFile(out), 'forged.mp4'), signed.asset_id);
  }, 120_000);
});
