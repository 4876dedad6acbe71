import { parseBlobKey } from '@cairn/blob';
import { CairnError } from '@cairn/errors';
import { isId } from '@cairn/ids';
import { checkMediaLimits, FfmpegError, sniffMediaType, SNIFF_BYTES } from '@cairn/media';
import { AudioTooShortError, AudioTooSparseError, isAudioMatch } from '../domain/audio.js';
import { compareVideoContent, indexedFrames, VIDEO_ALG, VideoFingerprintError } from '../domain/video.js';
import type { LookupDeps } from './lookup.js';

/** The content check's answer: `known` false when it cannot tell (then the caller falls back to a lookup). */
export interface ContentCheck {
  known: boolean;
  consistent: boolean;
  comparedFrames: number;
  matchedFrames: number;
  /** The file's sound lines up with the asset's indexed sound (asked only when the frames did not show the asset). */
  soundMatched: boolean;
}

const UNKNOWN: ContentCheck = {
  known: false,
  consistent: false,
  comparedFrames: 0,
  matchedFrames: 0,
  soundMatched: false,
};

/**
 * Is an uploaded file the content of one signed asset? Asked by the verifier when a registered watermark names the
 * asset and the file carries no manifest: a mark can be copied onto other content. A video is compared with the
 * asset's indexed frames (domain/video.ts `compareVideoContent`: the copy sampled densely, each indexed frame and its
 * crops looked for among the copy's frames, a vote); where they do not show the asset, with its indexed sound (the
 * copy's soundtrack aligned with the asset's landmarks, the audio lookup's rule): low-texture frames and heavy
 * crops move the frame hashes past the radius while the sound stays the asset's. Other media, an asset with neither
 * frames nor a matching sound, or a file that cannot be sampled: unknown. Answers no more than the verdict: never a
 * row, a tenant or a distance list.
 */
export async function compareContent(
  deps: Pick<LookupDeps, 'blobs' | 'indexes' | 'fingerprints' | 'mediaLimits'>,
  request: { uploadBlobKey: string; assetId: string },
): Promise<ContentCheck> {
  if (!isId('asset', request.assetId))
    throw new CairnError('cairn.validation.invalid_body', 'asset_id must be an a_ id');
  if (parseBlobKey(request.uploadBlobKey)?.kind !== 'upload')
    throw new CairnError('cairn.validation.invalid_body', 'upload_blob_key must name an upload.');
  const bytes = await deps.blobs.getBuffer(request.uploadBlobKey);
  if (!bytes) throw new CairnError('cairn.validation.invalid_body', 'The upload is gone; send the file again.');
  const sniffed = sniffMediaType(bytes.subarray(0, SNIFF_BYTES));
  if (sniffed?.modality !== 'video') return UNKNOWN;
  await checkMediaLimits(bytes, sniffed, deps.mediaLimits);
  const frames = await compareFrames(deps, bytes, request.assetId);
  if (frames.known && frames.consistent) return frames;
  if (!(await soundMatches(deps, bytes, request.assetId))) return frames;
  return { ...frames, known: true, consistent: true, soundMatched: true };
}

async function compareFrames(
  deps: Pick<LookupDeps, 'indexes' | 'fingerprints'>,
  bytes: Buffer,
  assetId: string,
): Promise<ContentCheck> {
  const indexed = indexedFrames(await deps.indexes.images.rowsOf(assetId, VIDEO_ALG));
  if (indexed.length === 0) return UNKNOWN;
  let sampled;
  try {
    sampled = await deps.fingerprints.sampleVideo(bytes);
  } catch (error) {
    // A file the sampler cannot read is not a verdict on its content.
    if (error instanceof VideoFingerprintError) return UNKNOWN;
    throw error;
  }
  const comparison = compareVideoContent(indexed, sampled.frames, sampled.spanSeconds);
  if (comparison.consistent === undefined) return UNKNOWN;
  return {
    known: true,
    consistent: comparison.consistent,
    comparedFrames: comparison.compared,
    matchedFrames: comparison.matched,
    soundMatched: false,
  };
}

/** The copy's soundtrack aligns with the asset's indexed sound by the audio lookup's rule (isAudioMatch). */
async function soundMatches(
  deps: Pick<LookupDeps, 'indexes' | 'fingerprints'>,
  bytes: Buffer,
  assetId: string,
): Promise<boolean> {
  let sound;
  try {
    sound = await deps.fingerprints.soundtrack(bytes);
  } catch (error) {
    // No sound to compare (too short, too sparse, not decodable): the frames' answer stands.
    if (error instanceof AudioTooShortError || error instanceof AudioTooSparseError || error instanceof FfmpegError)
      return false;
    throw error;
  }
  return sound !== null && isAudioMatch(await deps.indexes.audio.alignmentWith(assetId, sound));
}
