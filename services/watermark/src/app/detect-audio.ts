import { ANALYSIS_RATE, decodeAudioForDetection } from '../adapters/audio-codec.js';
import { AUDIO_WM, CAIRN_AUDIO_WM_V1_NAME } from '../domain/audio/cairn-audio-wm-v1.js';
import { inWorker, type WatermarkDeps } from './deps.js';
import { registeredMark } from './marks.js';

/** Shortest audio DetectAudio reads: one repetition and a frame (the grid may start anywhere in it). */
const MIN_DETECT_AUDIO_SECONDS = ((AUDIO_WM.period + 1) * AUDIO_WM.frame) / AUDIO_WM.sampleRate;

/** Looks for a cairn-audio-wm-v1 mark in an audio file under every key, current first, and resolves it. */
export async function detectAudio(deps: WatermarkDeps, encoded: Uint8Array) {
  const samples = await decodeAudioForDetection(encoded, deps.mediaLimits);
  // No decodable audio, or shorter than one repetition: nothing to look for (verify goes on without the signal).
  if (!samples || samples.length < MIN_DETECT_AUDIO_SECONDS * ANALYSIS_RATE)
    return { detected: false, applicable: false, algorithm: CAIRN_AUDIO_WM_V1_NAME };
  const {
    detection,
    algorithm: name,
    keyId,
  } = await inWorker(deps.logger, 'audio detection', () => deps.pool.detectAudio(samples, deps.keyring.all));
  if (!detection) return { detected: false, applicable: true, algorithm: name };
  return (await registeredMark(deps, detection, name, keyId)).answer;
}
