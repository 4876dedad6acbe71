import { decodeAudioMono } from '@cairn/media';
import { fingerprintSamples, MAX_SECONDS, SAMPLE_RATE, type AudioFingerprint } from '../domain/audio.js';

/** The fingerprint of an audio file (any format ffmpeg decodes; a video's audio track too). */
export async function fingerprintAudio(bytes: Buffer): Promise<AudioFingerprint> {
  return fingerprintSamples(await decodeAudioMono(bytes, SAMPLE_RATE, MAX_SECONDS));
}
