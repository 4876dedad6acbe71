import { CAIRN_SYNC_V2_NAME } from '../domain/image/cairn-sync-v2.js';
import { inWorker, type WatermarkDeps } from './deps.js';
import { AUDIO_MARK_RECORDED_AS, readAudioMark } from './detect-audio.js';
import { contentConsistent } from './content-check.js';
import { registeredMark } from './marks.js';
import type { MarkRecord } from './ports.js';
import type { RegisteredPoints } from '../domain/image/content-registration.js';
import { detectVideoMark } from './video-watermark.js';

/** Looks for the frame mark (cairn-sync-v2) in a video under every key, current first, and resolves it. */
export async function detectVideo(deps: WatermarkDeps, encoded: Uint8Array) {
  const found = await inWorker(deps.logger, 'video detection', () => detectVideoMark(deps, encoded, deps.keyring.all));
  if (!found.outcome) {
    // Frames that give nothing (lost to a downscale or a heavy re-encode, or too small): the audio track may.
    const heard = await readAudioMark(deps, encoded);
    if (heard.applicable && heard.outcome.detection) {
      const { detection, algorithm, keyId } = heard.outcome;
      const { answer } = await registeredMark(deps, detection, algorithm, keyId, AUDIO_MARK_RECORDED_AS);
      const { keyless: _keyless, ...fields } = answer;
      return { ...fields, atSeconds: 0 };
    }
    if (!found.applicable && !heard.applicable)
      return { detected: false, applicable: false, algorithm: CAIRN_SYNC_V2_NAME };
    return { detected: false, applicable: true, algorithm: found.algorithm ?? CAIRN_SYNC_V2_NAME };
  }
  const { detection, algorithm, keyId, registered } = found.outcome;
  const { answer, mark } = await registeredMark(deps, detection, algorithm, keyId);
  const { keyless: _keyless, ...fields } = answer;
  return {
    ...fields,
    atSeconds: found.atSeconds ?? 0,
    ...(consistentByGeometry(deps, mark, registered) ? { contentConsistent: true } : {}),
  };
}

/**
 * Whether the first second of the copy, placed on the embedding grid by the geometry its mark was read under, is
 * the first second the mark was embedded in (domain/video/content.ts). Only a yes is answered: the picture it
 * decided on is one second's average only when the first window read the mark, and the copy may start later than
 * the asset, so a no leaves the verdict to the soft-binding content check (the frames, then the sound).
 */
function consistentByGeometry(
  deps: WatermarkDeps,
  mark: MarkRecord | null,
  registered: RegisteredPoints | undefined,
): boolean {
  return mark !== null && registered !== undefined && contentConsistent(deps.logger, mark, registered) === true;
}
