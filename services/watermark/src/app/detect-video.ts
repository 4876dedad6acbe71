import { CAIRN_SYNC_V2_NAME } from '../domain/image/cairn-sync-v2.js';
import { inWorker, type WatermarkDeps } from './deps.js';
import { registeredMark } from './marks.js';
import { detectVideoMark } from './video-watermark.js';

/** Looks for the frame mark (cairn-sync-v2) in a video under every key, current first, and resolves it. */
export async function detectVideo(deps: WatermarkDeps, encoded: Uint8Array) {
  const found = await inWorker(deps.logger, 'video detection', () =>
    detectVideoMark({ pool: deps.pool, mediaLimits: deps.mediaLimits }, encoded, deps.keyring.all),
  );
  if (!found.applicable) return { detected: false, applicable: false, algorithm: CAIRN_SYNC_V2_NAME };
  if (!found.outcome) return { detected: false, applicable: true, algorithm: found.algorithm ?? CAIRN_SYNC_V2_NAME };
  const { detection, algorithm, keyId } = found.outcome;
  const { answer } = await registeredMark(deps, detection, algorithm, keyId);
  const { keyless: _keyless, ...fields } = answer;
  return { ...fields, atSeconds: found.atSeconds ?? 0 };
}
