import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from '@jest/globals';
import { runFfmpeg } from '@cairn/media';
import { recording, withSoundtrack } from './support/audio.js';
import { clip } from './support/video.js';
import { clipUpload, expectWatermarkOnly, signedForFile, verifyFile } from './support/watermark-fleet.js';

// 8 s of a moving test pattern, 640×360 at 25 fps, with speech-like sound (AAC 128k), made here with ffmpeg. Not
// shorter: after the signer's AAC and the copy's, 5 s of this speech no longer held the mark
// (services/watermark/docs/audio.md, "Limits").
const file = signedForFile(
  async () =>
    clipUpload(
      await withSoundtrack(
        await clip('testsrc2', { seconds: 8, width: 640, height: 360 }),
        await recording('speech', 8, 2),
      ),
    ),
  300_000,
);

/**
 * The signed clip with its frames shrunk to 160×90 and re-encoded at H.264 CRF 34: below the 96 pixels a side the video
 * detector looks at, so no frame mark can be read whatever the key (a halved copy at CRF 34 reads under some keys
 * with the small frames' grid, services/watermark/docs/video-benches.md). Written as most tools write MP4 (index first,
 * through a file).
 */
async function crushed(sound: string[]): Promise<Buffer> {
  const dir = await mkdtemp(join(tmpdir(), 'cairn-crushed-'));
  try {
    await writeFile(join(dir, 'signed.mp4'), file.signedBytes);
    await runFfmpeg({
      args: [
        '-i',
        join(dir, 'signed.mp4'),
        '-vf',
        'scale=160:90',
        '-c:v',
        'libx264',
        '-crf',
        '34',
        ...sound,
        '-movflags',
        '+faststart',
        '-y',
        join(dir, 'copy.mp4'),
      ],
      timeoutMs: 120_000,
    });
    return await readFile(join(dir, 'copy.mp4'));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

describe('the audio track of a signed video carries its mark (video-genai-v1)', () => {
  it('frames crushed, sound re-encoded to AAC 96k: verifies watermark_only naming the asset, through the audio', async () => {
    const copy = await crushed(['-c:a', 'aac', '-b:a', '96k']);
    const result = await verifyFile(file.stack, copy, 'copy.mp4');
    expectWatermarkOnly(result, file.signed.asset_id);
  }, 120_000);

  it('the same frames without the sound name the asset only by fingerprint: the audio carried the mark', async () => {
    const copy = await crushed(['-an']);
    const result = await verifyFile(file.stack, copy, 'silent.mp4');
    // Frames under the detector's floor and no sound: no watermark was read (the signal is absent, nothing was readable).
    expect(result.signals.watermark_present).not.toBe(true);
    expect(result.status).toBe('fingerprint_match_only');
    expect(result.matches[0]).toMatchObject({ asset_id: file.signed.asset_id, via: 'fingerprint' });
  }, 120_000);
});
