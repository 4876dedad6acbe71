import { decodeForDetection } from '../adapters/image-codec.js';
import { NEW_KEYED_ALGORITHM } from '../domain/image-tasks.js';
import { contentConsistent } from './content-check.js';
import { inWorker, type WatermarkDeps } from './deps.js';
import { registeredMark } from './marks.js';

/** Below this side no algorithm has a grid to read (callers skipped such images before detection moved here). */
const MIN_DETECT_SIDE = 64;

/**
 * Looks for a mark in an image file (every key, current first, then the keyless code) and resolves it in the
 * registry; a registered cairn-sync-v2 mark is also checked against the content it was embedded in.
 */
export async function detectImage(deps: WatermarkDeps, encoded: Uint8Array) {
  const image = await decodeForDetection(encoded, deps.mediaLimits);
  // Too small to carry a mark: nothing to look for (not an error: verify goes on without the signal).
  if (Math.min(image.width, image.height) < MIN_DETECT_SIDE)
    return { detected: false, applicable: false, algorithm: NEW_KEYED_ALGORITHM };
  const {
    detection,
    algorithm: name,
    keyId,
    registered,
  } = await inWorker(deps.logger, 'detection', () => deps.pool.detect(image, deps.keyring.all));
  if (!detection) return { detected: false, applicable: true, algorithm: name };
  const { answer, mark } = await registeredMark(deps, detection, name, keyId);
  // A registered v2 mark is also checked against what it was embedded in (the payload alone can be copied).
  if (!mark || !registered) return answer;
  const consistent = contentConsistent(deps.logger, mark, registered);
  return consistent === undefined ? answer : { ...answer, contentConsistent: consistent };
}
