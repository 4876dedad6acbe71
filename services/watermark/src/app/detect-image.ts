import { inSpan } from '@cairn/telemetry';
import type { Lane } from './ports.js';
import { CAIRN_SYNC_V2_NAME } from '../domain/image/cairn-sync-v2.js';
import { NEW_KEYED_ALGORITHM } from '../domain/image-tasks.js';
import { contentConsistent } from './content-check.js';
import { inWorker, type WatermarkDeps } from './deps.js';
import { DetectionMemo, type ImageReading, type ResolvedMark } from './detection-memo.js';
import { registeredMark } from './marks.js';

/** Below this side no algorithm has a grid to read (callers skipped such images before detection moved here). */
const MIN_DETECT_SIDE = 64;

/** The image file as the caller has it, or its SHA-256 when the caller expects a kept reading of it. */
export type DetectImageInput = ({ encoded: Uint8Array } | { sha256: string }) & {
  /** The file is Cairn's own copy of a signed asset: its reading is kept for the same bytes (app/detection-memo.ts). */
  cairnCopy: boolean;
  /** Nobody waits on the answer (the stored verdict): the search runs on the pool's low-priority worker. */
  lane?: Lane;
};

/**
 * Looks for a mark in an image file (every key, current first, then the keyless code) and resolves it in the
 * registry; a registered cairn-sync-v2 mark is also checked against the content it was embedded in. The search's
 * reading of a file Cairn signed is kept, so a verify of those very bytes skips the decode and the search, and,
 * once the registry row it resolved to is final, the lookup and the content check (app/detection-memo.ts).
 */
export async function detectImage(deps: WatermarkDeps, input: DetectImageInput) {
  const memoKey = 'encoded' in input ? DetectionMemo.keyOf(input.encoded) : input.sha256;
  let reading = deps.detections.get(memoKey);
  if (!reading) {
    // Named by digest and not kept: nothing to read; the caller sends the file.
    if (!('encoded' in input)) return { readingMissing: true, detected: false, applicable: false, algorithm: '' };
    // Cairn's own copy of a JPEG or PNG: the embedding's read-back of the same file less its manifest store, kept
    // without a decode; the stored verdict of a new sign gets it without decoding or searching again.
    const unsignedKey = input.cairnCopy ? DetectionMemo.unsignedKeyOf(input.encoded) : undefined;
    const kept = unsignedKey === undefined ? undefined : deps.detections.get(unsignedKey);
    reading = kept ?? (await readImage(deps, input.encoded, input.lane, input.cairnCopy));
    if (input.cairnCopy) deps.detections.set(memoKey, reading);
  }
  if (!reading.applicable) return { detected: false, applicable: false, algorithm: NEW_KEYED_ALGORITHM };
  const { detection, algorithm: name, keyId, registered } = reading.outcome;
  if (!detection) return { detected: false, applicable: true, algorithm: name };
  const known = deps.detections.answerOf(memoKey);
  if (known) return known;
  const { answer, mark } = await inSpan('watermark.registry.find', () => registeredMark(deps, detection, name, keyId));
  // A registered v2 mark is also checked against what it was embedded in (the payload alone can be copied), unless
  // this reading is the embedding's own read-back of that very mark.
  const consistent =
    mark && registered
      ? reading.embeddedAs === mark.watermarkId || contentConsistent(deps.logger, mark, registered)
      : undefined;
  const resolved: ResolvedMark = consistent === undefined ? answer : { ...answer, contentConsistent: consistent };
  // The row is final once found with what it will ever hold (a cairn-sync-v2 row's description is set once, after
  // the embedding); a payload not found yet, or a description still to come, is looked up again next time.
  if (mark && (mark.content !== null || mark.algorithm !== CAIRN_SYNC_V2_NAME))
    deps.detections.keepAnswer(memoKey, resolved);
  return resolved;
}

/** The decode and the search (every key, then keyless), in a worker. */
async function readImage(
  deps: WatermarkDeps,
  encoded: Uint8Array,
  lane: Lane = 'foreground',
  cairnCopy = false,
): Promise<ImageReading> {
  // An upload is read at a working size, so its search costs what the grids it reads cost, not what its pixels do.
  // Cairn's own copy is read whole: its pixels are the key of the reading the embedding kept (just below), taken
  // from the readback of the very file at full size.
  const image = await inSpan('watermark.decode', () =>
    deps.codecs.decodeForDetection(encoded, deps.mediaLimits, { workingSize: !cairnCopy }),
  );
  // Too small to carry a mark: nothing to look for (not an error: verify goes on without the signal).
  if (Math.min(image.width, image.height) < MIN_DETECT_SIDE) return { applicable: false };
  // Cairn's own copy in a format not keyed by its bytes (WebP): its pixels are those the embedding read its mark
  // back from (embed-image.ts), whose reading is kept; the stored verdict of a new sign gets it without a search.
  if (cairnCopy) {
    const kept = deps.detections.get(DetectionMemo.pixelKeyOf(image));
    if (kept) return kept;
  }
  const outcome = await inSpan('watermark.detect', () =>
    inWorker(deps.logger, 'detection', () => deps.pool.detect(image, deps.keyring.all, undefined, lane)),
  );
  return { applicable: true, outcome };
}
