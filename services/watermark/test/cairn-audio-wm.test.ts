import { randomBytes } from 'node:crypto';
import { beforeAll, describe, expect, it } from '@jest/globals';
import { decodeAudioForEmbedding, encodeMarkedAudio } from '../src/adapters/audio-codec.js';
import { embedAudioMark, snrDb } from '../src/domain/audio/apply.js';
import { audioPayloadFor, AudioWatermark } from '../src/domain/audio/cairn-audio-wm-v1.js';
import { DEFAULT_MEDIA_LIMITS } from '@cairn/media';
import { payloadHex } from '../src/domain/payload.js';
import { attacked, AUDIO_ATTACKS, mono16k, recording } from './support/audio.js';

const key = Uint8Array.from(randomBytes(32));
const payload = audioPayloadFor(key, 'w_01JAUDIOTEST00000000000000');
let original: Buffer;
let marked: Buffer;
let snr: number;

beforeAll(async () => {
  // 12 s of speech-like audio, stereo 44.1 kHz 16-bit: marked as the service does (decode, mark, encode as WAV).
  original = await recording('speech', 12, 2);
  const decoded = await decodeAudioForEmbedding(original, DEFAULT_MEDIA_LIMITS);
  const before = decoded.samples.slice();
  embedAudioMark(
    new AudioWatermark(key),
    { samples: decoded.samples, sampleRate: decoded.format.sampleRate, channels: decoded.format.channels },
    payload,
  );
  snr = snrDb(before, decoded.samples);
  marked = await encodeMarkedAudio(decoded.samples, decoded.format);
}, 60_000);

const read = async (bytes: Buffer, withKey: Uint8Array = key) => {
  const found = new AudioWatermark(withKey).detect(await mono16k(bytes));
  return found ? payloadHex(found.payload) : null;
};

describe('cairn-audio-wm-v1', () => {
  it('marks speech at an SNR of at least 35 dB against the upload and reads the payload back', async () => {
    expect(snr).toBeGreaterThanOrEqual(35);
    expect(await read(marked)).toBe(payloadHex(payload));
  });

  it.each([
    'MP3 128k',
    'resample 16 kHz',
    'gain −6 dB',
    'gain +6 dB',
    'cut 1.23 s at start, 0.7 s at end',
    '3 s excerpt',
  ])('reads the payload after %s', async (name) => {
    expect(await read(await attacked(marked, AUDIO_ATTACKS[name]!))).toBe(payloadHex(payload));
  });

  it('reads any 3 s excerpt, wherever it starts', async () => {
    for (const start of [0.1, 4.4, 8.05]) {
      const excerpt = await attacked(marked, [
        '-af',
        `atrim=start=${start}:duration=3,asetpts=PTS-STARTPTS`,
        '-f',
        'wav',
      ]);
      expect(await read(excerpt)).toBe(payloadHex(payload));
    }
  });

  it('finds nothing under another key, and nothing in the unmarked recording', async () => {
    expect(await read(marked, Uint8Array.from(randomBytes(32)))).toBeNull();
    expect(await read(original)).toBeNull();
  });

  it('does not read a mark the published code embedded under a wrong key, even with the victim’s payload', async () => {
    // The attacker has the code and a public payload (manifests carry it), not the key.
    const decoded = await decodeAudioForEmbedding(
      await attacked(original, ['-t', '6', '-f', 'wav']),
      DEFAULT_MEDIA_LIMITS,
    );
    embedAudioMark(
      new AudioWatermark(Uint8Array.from(randomBytes(32))),
      { samples: decoded.samples, sampleRate: decoded.format.sampleRate, channels: decoded.format.channels },
      payload,
    );
    expect(await read(await encodeMarkedAudio(decoded.samples, decoded.format))).toBeNull();
  });

  it('keeps the container and quality: WAV stays 16-bit PCM at its rate and channels', async () => {
    const decoded = await decodeAudioForEmbedding(marked, DEFAULT_MEDIA_LIMITS);
    expect(decoded.format).toMatchObject({
      mediaType: 'audio/wav',
      codec: 'pcm_s16le',
      sampleRate: 44_100,
      channels: 2,
    });
    expect(decoded.format.seconds).toBeCloseTo(12, 2);
  });
});
