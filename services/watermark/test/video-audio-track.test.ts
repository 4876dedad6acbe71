import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { DEFAULT_MEDIA_LIMITS, probeFfmpeg } from '@cairn/media';
import { createLogger } from '@cairn/logging';
import { markAudioTrack } from '../src/app/video-audio-track.js';
import { keyedPayloadFor, payloadHex } from '../src/domain/payload.js';
import { ImageWorkerPool } from '../src/adapters/worker-pool.js';
import { mediaCodecs } from '../src/adapters/media-codecs.js';
import { VideoFile } from '../src/adapters/video-codec.js';
import { mono16k, recording, withSoundtrack } from '../../../test/support/audio.js';
import { clip, transcoded } from '../../../test/support/video.js';

const key = { kid: 'video-audio-test', secret: Uint8Array.from(randomBytes(32)) };
const payload = keyedPayloadFor(key.secret, 'w_01JVIDEOAUDIOTEST000000000');
let pool: ImageWorkerPool;
let deps: Parameters<typeof markAudioTrack>[0];
let speech: Buffer;

/** The payload the audio track carries, read from the 16 kHz mix as DetectVideo's fallback reads it. */
const heard = async (bytes: Buffer, keys = [key]) => {
  const { detection } = await pool.detectAudio(await mono16k(bytes), keys);
  return detection ? payloadHex(detection.payload) : null;
};

async function describeFile(bytes: Buffer): Promise<string> {
  const file = await VideoFile.write(bytes);
  try {
    return await probeFfmpeg(file.path);
  } finally {
    await file.remove();
  }
}

const streamLine = (text: string, kind: 'Video' | 'Audio') =>
  new RegExp(`Stream #\\d+:\\d+.*?: ${kind}: ([^\\n]*)`).exec(text)?.[1] ?? '';

beforeAll(async () => {
  pool = new ImageWorkerPool({ size: 1 });
  deps = {
    pool,
    codecs: mediaCodecs,
    mediaLimits: DEFAULT_MEDIA_LIMITS,
    logger: createLogger({ service: 'watermark-test', level: 'silent' }),
  };
  // 8 s of speech-like audio, stereo 44.1 kHz, made here with ffmpeg: the sound of small clips below. Not shorter:
  // through two AAC encodes (the answer's and the copy's), 6 s of it missed the mark under some random keys (on a
  // fresh-clone CI run), as 5 s did in the fleet test (test/video-audio-watermark.test.ts; docs/audio.md, "Limits").
  speech = await recording('speech', 8, 2);
}, 60_000);
afterAll(() => pool?.close(0));

describe('the audio track of a video carries cairn-audio-wm-v3 with the frame mark payload', () => {
  it('MP4: AAC again at about the track bit rate, rate and channels kept, video stream copied; read after a heavy re-encode', async () => {
    const video = await withSoundtrack(await clip('testsrc2', { seconds: 8, width: 320, height: 180 }), speech);
    const marked = await markAudioTrack(deps, video, 'video/mp4', payload, key);
    expect(marked).not.toBeNull();
    expect(marked!.snrDb).toBeGreaterThanOrEqual(35);
    const before = await describeFile(video);
    const after = await describeFile(marked!.encoded);
    expect(streamLine(after, 'Video')).toBe(streamLine(before, 'Video'));
    expect(streamLine(after, 'Audio')).toMatch(/^aac\b.*44100 Hz, stereo/);
    const kbps = (line: string) => Number(/(\d+) kb\/s/.exec(line)?.[1]);
    expect(Math.abs(kbps(streamLine(after, 'Audio')) - kbps(streamLine(before, 'Audio')))).toBeLessThan(16);
    expect(await heard(video)).toBeNull();
    expect(await heard(marked!.encoded)).toBe(payloadHex(payload));
    // Frames scaled to a quarter and crushed (no frame mark survives that), the sound to AAC 96k.
    const crushed = await transcoded(marked!.encoded, [
      '-vf',
      'scale=160:90',
      '-c:v',
      'libx264',
      '-crf',
      '40',
      '-c:a',
      'aac',
      '-b:a',
      '96k',
    ]);
    expect(await heard(crushed)).toBe(payloadHex(payload));
    expect(await heard(crushed, [{ kid: 'other', secret: Uint8Array.from(randomBytes(32)) }])).toBeNull();
  }, 180_000);

  it('WebM: Opus again, and its sound alone (Opus 96k again, in Ogg) still reads', async () => {
    const video = await withSoundtrack(
      await clip('testsrc2', { seconds: 6, width: 320, height: 180, container: 'webm' }),
      speech,
      'webm',
    );
    const marked = await markAudioTrack(deps, video, 'video/webm', payload, key);
    expect(marked).not.toBeNull();
    const after = await describeFile(marked!.encoded);
    expect(streamLine(after, 'Video')).toMatch(/^vp9/);
    expect(streamLine(after, 'Audio')).toMatch(/^opus\b.*48000 Hz, stereo/);
    expect(await heard(marked!.encoded)).toBe(payloadHex(payload));
    const sound = await transcoded(marked!.encoded, ['-vn', '-c:a', 'libopus', '-b:a', '96k', '-f', 'ogg']);
    expect(await heard(sound)).toBe(payloadHex(payload));
  }, 180_000);

  it('a video without sound is left to its frames', async () => {
    const silent = await clip('testsrc2', { seconds: 2, width: 320, height: 180 });
    expect(await markAudioTrack(deps, silent, 'video/mp4', payload, key)).toBeNull();
  }, 60_000);
});
