import { decodeAudioMono, FfmpegError } from '@cairn/media';
import { fingerprintSamples, MAX_SECONDS, SAMPLE_RATE, type AudioFingerprint } from '../domain/audio.js';

/** The fingerprint of an audio file (any format ffmpeg decodes; a video's audio track too). */
export async function fingerprintAudio(bytes: Buffer): Promise<AudioFingerprint> {
  return fingerprintSamples(await decodeAudioMono(bytes, SAMPLE_RATE, MAX_SECONDS));
}

/**
 * The fingerprint of a video's sound (the audio stream ffmpeg picks by default: the first, unless a later one has
 * more channels), so that the sound taken out of a signed video is found as audio; null when it has no sound.
 * Bounded as an audio file's: the first `MAX_SECONDS` decoded to 8 kHz mono (19 MB at most).
 */
export async function fingerprintSoundtrack(bytes: Buffer): Promise<AudioFingerprint | null> {
  let samples: Float32Array;
  try {
    samples = await decodeAudioMono(bytes, SAMPLE_RATE, MAX_SECONDS);
  } catch (error) {
    // `-vn` leaves nothing to write when the file has no audio stream: a silent video, not a bad file.
    if (error instanceof FfmpegError && /does not contain any stream/.test(error.stderr)) return null;
    throw error;
  }
  return fingerprintSamples(samples);
}
