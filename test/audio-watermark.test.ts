import { describe, expect, it } from '@jest/globals';
import { runFfmpeg } from '@cairn/media';
import { recording } from './support/audio.js';
import { expectWatermarkOnly, itSignsMarkedAndVerifies, signedForFile, verifyFile } from './support/watermark-fleet.js';

// 12 s of speech-like audio, stereo 44.1 kHz 16-bit PCM, made here with ffmpeg.
const file = signedForFile(
  async () => ({
    recipe: 'audio-genai-v1',
    metadata: { generator: 'VoiceGen', model: 'v2' },
    bytes: await recording('speech', 12, 2),
    name: 'voice.wav',
  }),
  180_000,
);

describe('audio watermark through HTTP (audio-genai-v1)', () => {
  itSignsMarkedAndVerifies(file, {
    title: 'signs a WAV as WAV with a watermark the manifest names (cairn-audio-wm-v3 and its payload)',
    mediaType: 'audio/wav',
    alg: 'cairn-audio-wm-v3',
  });

  it('the same re-encoded to MP3 128k (manifest gone) verifies watermark_only, naming its asset', async () => {
    const mp3 = await runFfmpeg({
      args: ['-i', 'pipe:0', '-c:a', 'libmp3lame', '-b:a', '128k', '-f', 'mp3', 'pipe:1'],
      input: file.signedBytes,
    });
    const result = await verifyFile(file.stack, mp3, 'copy.mp3');
    expectWatermarkOnly(result, file.signed.asset_id);
  });

  it('unmarked audio of the same kind verifies no_provenance (the detector does not invent a mark)', async () => {
    const other = await recording('music', 8, 2);
    const result = await verifyFile(file.stack, other, 'other.wav');
    expect(result.status).toBe('no_provenance');
  });
});
