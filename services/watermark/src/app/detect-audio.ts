import { ANALYSIS_RATE } from '../domain/media-formats.js';
import { CAIRN_AUDIO_WM_V1_NAME } from '../domain/audio/cairn-audio-wm-v1.js';
import { AUDIO_WM_V3, CAIRN_AUDIO_WM_V3_NAME } from '../domain/audio/cairn-audio-wm-v3.js';
import { CAIRN_SYNC_V2_NAME } from '../domain/image/cairn-sync-v2.js';
import type { DetectOutcome } from '../domain/worker-protocol.js';
import type { WatermarkKey } from '../domain/keys.js';
import { inWorker, type WatermarkDeps } from './deps.js';
import { registeredMark } from './marks.js';

/** Shortest audio DetectAudio reads: one repetition and a frame (v3 and v1 repeat alike; the grid may start anywhere). */
export const MIN_DETECT_AUDIO_SECONDS = ((AUDIO_WM_V3.period + 1) * AUDIO_WM_V3.frame) / AUDIO_WM_V3.sampleRate;

/**
 * The registry rows an audio read may resolve to: an audio upload's (v3, or v1 before it) and a signed video's,
 * whose sound carries its frame mark's payload, recorded as cairn-sync-v2. A v3 read never decodes a v1 payload
 * (each algorithm keys its own layout and check), so one list serves both.
 */
export const AUDIO_MARK_RECORDED_AS: ReadonlyArray<string> = [
  CAIRN_AUDIO_WM_V3_NAME,
  CAIRN_AUDIO_WM_V1_NAME,
  CAIRN_SYNC_V2_NAME,
];

/**
 * Reads cairn-audio-wm-v3, then v1, from an audio file or a video's first audio track under every key, current first; not
 * applicable without decodable audio or with less than the detector needs. Only the seconds it reads are decoded.
 * `keys`: every key unless named (an embedding's read-back names its own).
 */
export async function readAudioMark(
  deps: WatermarkDeps,
  encoded: Uint8Array,
  keys: ReadonlyArray<WatermarkKey> = deps.keyring.all,
): Promise<{ applicable: false } | { applicable: true; outcome: DetectOutcome }> {
  const samples = await deps.codecs.decodeAudioForDetection(encoded, deps.mediaLimits, AUDIO_WM_V3.detectMaxSeconds);
  if (!samples || samples.length < MIN_DETECT_AUDIO_SECONDS * ANALYSIS_RATE) return { applicable: false };
  const outcome = await inWorker(deps.logger, 'audio detection', () => deps.pool.detectAudio(samples, keys));
  return { applicable: true, outcome };
}

/** Looks for a cairn-audio-wm-v3 or v1 mark in an audio file under every key, current first, and resolves it. */
export async function detectAudio(deps: WatermarkDeps, encoded: Uint8Array) {
  const read = await readAudioMark(deps, encoded);
  // No decodable audio, or shorter than one repetition: nothing to look for (verify goes on without the signal).
  if (!read.applicable) return { detected: false, applicable: false, algorithm: CAIRN_AUDIO_WM_V3_NAME };
  const { detection, algorithm: name, keyId } = read.outcome;
  if (!detection) return { detected: false, applicable: true, algorithm: name };
  return (await registeredMark(deps, detection, name, keyId, AUDIO_MARK_RECORDED_AS)).answer;
}
