import { parseBlobKey } from '@cairn/blob';
import { CairnError } from '@cairn/errors';
import { isId } from '@cairn/ids';
import { checkMediaLimits, sniffMediaType, SNIFF_BYTES } from '@cairn/media';
import { compareVideoContent, indexedFrames, VIDEO_ALG, VideoFingerprintError } from '../domain/video.js';
import type { LookupDeps } from './lookup.js';

/** The content check's answer: `known` false when it cannot tell (then the caller falls back to a lookup). */
export interface ContentCheck {
  known: boolean;
  consistent: boolean;
  comparedFrames: number;
  matchedFrames: number;
}

const UNKNOWN: ContentCheck = { known: false, consistent: false, comparedFrames: 0, matchedFrames: 0 };

/**
 * Is an uploaded file the content of one signed asset? Asked by the verifier when a registered watermark names the
 * asset and the file carries no manifest: a mark can be copied onto other content. A video is compared with the
 * asset's indexed frames (domain/video.ts `compareVideoContent`: the copy sampled densely, each indexed frame and its
 * crops looked for among the copy's frames, a vote). Other media, an asset without indexed frames, or a file that
 * cannot be sampled: unknown. Answers no more than the verdict: never a row, a tenant or a distance list.
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
  const indexed = indexedFrames(await deps.indexes.images.rowsOf(request.assetId, VIDEO_ALG));
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
  };
}
