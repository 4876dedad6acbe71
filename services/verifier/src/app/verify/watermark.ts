import { createHash } from 'node:crypto';
import { probeImage, type Modality } from '@cairn/media';
import type { WatermarkEvidence } from '../../domain/evidence.js';
import type { VerifyDeps } from './deps.js';

/** What the watermark service answered for an image or an audio file, as evidence. */
interface DetectAnswer {
  applicable: boolean;
  detected: boolean;
  payloadHex: string;
  confidence: number;
  registered: boolean;
  assetId: string;
  watermarkId: string;
  keyless?: boolean;
  /** Set by the watermark service when it compared the content itself (cairn-sync-v2, after undoing the geometry). */
  contentConsistent?: boolean;
}

/**
 * One watermark detection through the watermark service, which decodes the file itself under its own limits (no
 * pixels or samples on the wire). A file it cannot read is "not applicable"; an outage is a failed signal.
 */
async function detectMark(
  deps: VerifyDeps,
  what: string,
  detect: () => Promise<DetectAnswer>,
  notApplicable: string,
): Promise<WatermarkEvidence> {
  try {
    const found = await detect();
    if (!found.applicable) return { ran: false, reason: 'not_applicable', detail: notApplicable };
    if (!found.detected) return { ran: true, detected: false };
    return {
      ran: true,
      detected: true,
      payloadHex: found.payloadHex,
      confidence: found.confidence,
      registered: found.registered,
      ...(found.assetId ? { assetId: found.assetId } : {}),
      ...(found.watermarkId ? { watermarkId: found.watermarkId } : {}),
      ...(found.keyless ? { keyless: true } : {}),
      ...(found.contentConsistent === undefined ? {} : { contentConsistent: found.contentConsistent }),
    };
  } catch (error) {
    deps.logger.warn({ err: error }, `${what} watermark detection failed`);
    return { ran: false, reason: 'failed', detail: error instanceof Error ? error.message : String(error) };
  }
}

/**
 * The image watermark. `cairnCopy`: the bytes are Cairn's own signed file (read by asset or manifest id, as the
 * stored verdict does), whose reading the watermark service keeps for a later verify of the very same bytes.
 * `byDigest`: the service most likely keeps a reading of these bytes; they are named by SHA-256 first, and sent
 * only when it keeps none.
 */
export async function detectWatermark(
  deps: VerifyDeps,
  bytes: Buffer,
  { cairnCopy, byDigest }: { cairnCopy: boolean; byDigest: boolean },
): Promise<WatermarkEvidence> {
  const kept = byDigest ? await keptAnswer(deps, bytes) : undefined;
  if (kept) return detectMark(deps, 'image', () => Promise.resolve(kept), 'image too small');
  // Header only, to tell an image from bytes that merely look like one.
  if (!(await probeImage(bytes))) return { ran: false, reason: 'not_applicable', detail: 'image could not be decoded' };
  return detectMark(
    deps,
    'image',
    () => deps.watermark.detectImage({ encoded: bytes, cairnCopy }, { deadlineMs: 30_000 }),
    'image too small',
  );
}

/** The watermark service's answer from the reading it keeps of these bytes, or undefined when it keeps none. */
async function keptAnswer(deps: VerifyDeps, bytes: Buffer): Promise<DetectAnswer | undefined> {
  const sha256 = createHash('sha256').update(bytes).digest('hex');
  try {
    const answer = await deps.watermark.detectImage({ sha256 }, { deadlineMs: 30_000 });
    return answer.readingMissing ? undefined : answer;
  } catch (error) {
    // The file is sent next: an outage shows there, as a failed signal.
    deps.logger.warn({ err: error }, 'image watermark detection by digest failed; sending the file');
    return undefined;
  }
}

/**
 * The marks of audio and video, which the watermark service reads from the whole encoded file: its call for each, and
 * what "not applicable" means there.
 */
const STREAM_MARKS = {
  /** cairn-audio-wm-v3, or v1 on audio marked before it. */
  audio: {
    detect: (deps: VerifyDeps, encoded: Buffer) => deps.watermark.detectAudio({ encoded }, { deadlineMs: 60_000 }),
    notApplicable: 'no decodable audio, or shorter than one repetition of the mark',
  },
  /** Frames carrying cairn-sync-v2, read from one-second averages of the first seconds. */
  video: {
    detect: (deps: VerifyDeps, encoded: Buffer) => deps.watermark.detectVideo({ encoded }, { deadlineMs: 60_000 }),
    notApplicable: 'no decodable video stream, or frames too small to carry a mark',
  },
} as const;

/** The audio or the video watermark (STREAM_MARKS). */
export function detectStreamWatermark(
  deps: VerifyDeps,
  modality: keyof typeof STREAM_MARKS,
  bytes: Buffer,
): Promise<WatermarkEvidence> {
  const mark = STREAM_MARKS[modality];
  return detectMark(deps, modality, () => mark.detect(deps, bytes), mark.notApplicable);
}

/**
 * A registered watermark names an asset, but a mark proves only that someone with the key embedded it (or copied
 * its signal): the content must also look like that asset. A cairn-sync-v2 mark is checked by the watermark
 * service itself, which knows the geometry it read the mark under and compares the picture, registered back, with
 * what the mark was embedded in (crops and rotations included; its answer is the evidence's contentConsistent).
 * Its yes settles it; what it does not confirm (an image's no, a video's silence) and other marks are compared by
 * the soft-binding service: a video first by its content check against that one asset (the asset's indexed frames
 * and their crops, the copy sampled densely, so re-encodes, scaling, crops and frame-rate changes compare as the
 * same content; where the frames do not, the asset's indexed sound), and where that does not name the asset (not a
 * video, nothing indexed, or no match), by perceptual fingerprint within the lookup radius, asked across tenants
 * with public fields only. Undefined when it cannot be told (the calls failed or the file has no fingerprint).
 */
export async function contentMatchesAsset(
  deps: VerifyDeps,
  uploadBlobKey: string,
  assetId: string,
  modality: Modality,
): Promise<boolean | undefined> {
  // The soft-binding content check compares videos only: other media go straight to the lookup.
  if (modality === 'video') {
    try {
      const check = await deps.softbinding.compareContent({ uploadBlobKey, assetId }, { deadlineMs: 30_000 });
      // A refusal is not final: the lookup samples at the index's own instants, which a copy of a clip whose every
      // frame differs (a moving test pattern) meets exactly where the dense sampling falls between frames.
      if (check.known && check.consistent) return true;
    } catch (error) {
      deps.logger.warn({ err: error }, 'soft-binding content check failed; looking the file up instead');
    }
  }
  try {
    const { matches } = await deps.softbinding.lookup(
      { tenantId: '', query: { case: 'uploadBlobKey', value: uploadBlobKey }, limit: 50 },
      { deadlineMs: 20_000 },
    );
    return matches.some((m) => m.assetId === assetId);
  } catch (error) {
    deps.logger.warn({ err: error }, 'soft-binding lookup for the watermark content check failed');
    return undefined;
  }
}
