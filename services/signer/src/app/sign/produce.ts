import { CairnError } from '@cairn/errors';
import { newId } from '@cairn/ids';
import { isEmbeddableMimeType, isSidecarMimeType } from '../../domain/media-types.js';
import { decodeImage, encodeImage, makeThumbnail, MIN_IMAGE_SIDE, type ImageMediaType } from '../../domain/image.js';
import type { AcceptedUpload } from './accept.js';
import { signAsUploaded, type SignWithC2pa } from './c2pa.js';
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { watermarkV1 } from '@cairn/proto';
import { timed, type EmbeddedWatermark, type PipelineDeps, type SignedBytes, type SignProgress } from './deps.js';

const IMAGE_TYPES: ReadonlySet<string> = new Set(['image/jpeg', 'image/png', 'image/webp']);
/** A text generation event is text, not a document archive: larger uploads are refused. */
const MAX_TEXT_BYTES = 5 * 1024 * 1024;
/** Signed as uploaded, with an embedded manifest. */
const AS_UPLOADED_TYPES: ReadonlySet<string> = new Set(['audio/wav', 'audio/mpeg', 'audio/flac', 'video/mp4']);

export interface Produced {
  signed: SignedBytes;
  watermark?: EmbeddedWatermark;
  /** The recipe asked for a watermark and none that reads back could be embedded: why (the sign goes on without). */
  watermarkNotEmbedded?: string;
}

interface Target {
  tenantId: string;
  assetId: string;
}

function isWellFormedUtf8(bytes: Buffer): boolean {
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    return true;
  } catch {
    return false;
  }
}

/** Step 2: the signed file, per modality (watermarked where the recipe asks and the modality has one). */
export async function produceSigned(
  deps: PipelineDeps,
  target: Target,
  accepted: AcceptedUpload,
  sign: SignWithC2pa,
  progress?: SignProgress,
): Promise<Produced> {
  if (accepted.sniffed.modality === 'text') return { signed: await signText(accepted, sign) };
  if (accepted.sniffed.modality === 'audio' || accepted.sniffed.modality === 'video')
    return signAudioOrVideo(deps, target, accepted, sign, progress);
  if (accepted.recipe.watermark) progress?.('watermarking', 0);
  return signImage(deps, target, accepted, sign);
}

/** A text generation event: the UTF-8 bytes are kept as they are and bound by a sidecar manifest. */
async function signText({ upload, sniffed }: AcceptedUpload, sign: SignWithC2pa): Promise<SignedBytes> {
  if (!isSidecarMimeType(sniffed.mediaType))
    throw new CairnError(
      'cairn.sign.unsupported_mime',
      `Signing ${sniffed.mediaType} is not available; plain UTF-8 text is.`,
    );
  if (upload.length > MAX_TEXT_BYTES)
    throw new CairnError(
      'cairn.validation.invalid_body',
      `Text to sign is at most ${MAX_TEXT_BYTES / 1024 / 1024} MiB (this is ${upload.length} bytes).`,
    );
  if (!isWellFormedUtf8(upload))
    throw new CairnError('cairn.sign.unsupported_mime', 'The text is not valid UTF-8; send UTF-8 text.');
  return sign({ asset: upload, mimeType: sniffed.mediaType });
}

/**
 * Audio and video are signed in their own container: the manifest is embedded in it, or, for OGG and WebM, kept
 * beside it as a sidecar bound to the file's bytes. Both carry the watermark when the recipe asks: audio
 * cairn-audio-wm-v3, video frames cairn-sync-v2 (the image mark on every frame) and its sound cairn-audio-wm-v3.
 */
async function signAudioOrVideo(
  deps: PipelineDeps,
  target: Target,
  { recipe, upload, sniffed }: AcceptedUpload,
  sign: SignWithC2pa,
  progress?: SignProgress,
): Promise<Produced> {
  const mimeType = sniffed.mediaType;
  if (!(AS_UPLOADED_TYPES.has(mimeType) && isEmbeddableMimeType(mimeType)) && !isSidecarMimeType(mimeType)) {
    throw new CairnError(
      'cairn.sign.unsupported_mime',
      `Signing ${mimeType} is not available; WAV, MP3, FLAC, OGG, MP4 and WebM are.`,
    );
  }
  if (!recipe.watermark) return { signed: await signAsUploaded({ asset: upload, mimeType }, sign) };
  // The watermark service decodes the upload (under its own limits), marks it with a key that never leaves it,
  // and answers the file re-encoded in the same container and quality; that file is what gets signed.
  const watermarkId = newId('watermark');
  const request = { tenantId: target.tenantId, watermarkId, assetId: target.assetId, encoded: upload };
  progress?.('watermarking', 0);
  const marked: {
    encoded: Uint8Array;
    mediaType: string;
    payloadHex: string;
    algorithm: string;
    keyId: string;
    notEmbeddedReason: string;
  } =
    sniffed.modality === 'video'
      ? await timed(deps, 'watermark', () =>
          progress
            ? embedVideoWithProgress(deps, request, videoDeadlineMs(upload.length), progress)
            : deps.watermark.embedVideo(request, { deadlineMs: videoDeadlineMs(upload.length) }),
        )
      : await timed(deps, 'watermark', () => deps.watermark.embedAudio(request, { deadlineMs: 120_000 }));
  // No mark read back from the marked file: the upload is signed as it came, without a soft binding, and said so.
  if (marked.notEmbeddedReason)
    return {
      signed: await signAsUploaded({ asset: upload, mimeType }, sign),
      watermarkNotEmbedded: marked.notEmbeddedReason,
    };
  if (marked.encoded.length === 0 || marked.mediaType !== mimeType)
    throw new CairnError(
      'cairn.internal_error',
      `The watermark service returned no ${sniffed.modality} in the upload’s format.`,
    );
  const watermark = {
    id: watermarkId,
    payloadHex: marked.payloadHex,
    algorithm: marked.algorithm,
    keyId: marked.keyId,
  };
  return { signed: await signAsUploaded({ asset: Buffer.from(marked.encoded), mimeType, watermark }, sign), watermark };
}

/**
 * EmbedVideo for a caller that shows progress (a sign job): the watermark service streams how far the frames are
 * (at most every 500 ms), then the marked video. A watermark service that goes away mid-stream (a restart, a
 * rollout) is waited for up to `deps.watermarkWaitMs` and asked again with the same watermark id (the method is
 * idempotent on it: the same key and payload); its frames are marked again from the first, and the caller's
 * progress holds until the new run passes it (JobProgressWriter).
 */
async function embedVideoWithProgress(
  deps: PipelineDeps,
  video: MessageInitShape<typeof watermarkV1.EmbedVideoRequestSchema>,
  deadlineMs: number,
  progress: SignProgress,
): Promise<watermarkV1.EmbedVideoResponse> {
  const waitMs = deps.watermarkWaitMs ?? 0;
  const started = Date.now();
  try {
    const stream = deps.watermark.embedVideoWithProgress({ video }, { deadlineMs, retryWithinMs: waitMs });
    for await (const { update } of stream) {
      if (update.case === 'progress') progress('watermarking', update.value.fraction);
      else if (update.case === 'result') return update.value;
    }
  } catch (error) {
    if (!(error instanceof CairnError) || error.code !== 'cairn.unavailable') throw error;
    // Said for the job's problem: which peer, and how long it was given.
    const detail =
      Date.now() - started >= deadlineMs
        ? `The watermark service did not finish marking the video within ${Math.round(deadlineMs / 1000)} s.`
        : `The watermark service was unavailable while marking the video and did not come back within ${Math.round(waitMs / 1000)} s.`;
    throw new CairnError('cairn.unavailable', detail, {}, { cause: error });
  }
  throw new CairnError('cairn.unavailable', 'The watermark service ended the video stream without the marked video.');
}

/**
 * How long a video's marking may take: every frame is decoded, marked and re-encoded (at least real time for 720p
 * on two cores, measured), so the budget grows with the upload; large uploads are sign jobs anyway.
 */
function videoDeadlineMs(bytes: number): number {
  return 120_000 + Math.ceil(bytes / (1024 * 1024)) * 20_000;
}

/** Images: watermarked by the watermark service (decoded and encoded once there), or re-encoded here. */
async function signImage(
  deps: PipelineDeps,
  target: Target,
  { recipe, upload, sniffed, probe }: AcceptedUpload,
  sign: SignWithC2pa,
): Promise<Produced> {
  if (!IMAGE_TYPES.has(sniffed.mediaType)) {
    throw new CairnError(
      'cairn.sign.unsupported_mime',
      `Signing ${sniffed.modality} is not available yet on this deployment; images (JPEG, PNG, WebP), audio (WAV, MP3, FLAC), video (MP4) and text are.`,
    );
  }
  const mediaType = sniffed.mediaType as ImageMediaType;
  if (!probe?.width || !probe.height)
    throw new CairnError('cairn.sign.unsupported_mime', `The file looks like ${mediaType} but cannot be decoded.`);
  if (Math.min(probe.width, probe.height) < MIN_IMAGE_SIDE) {
    throw new CairnError(
      'cairn.validation.invalid_body',
      `Images must be at least ${MIN_IMAGE_SIDE}×${MIN_IMAGE_SIDE} pixels to carry a watermark (this one is ${probe.width}×${probe.height}).`,
    );
  }
  if (recipe.watermark) {
    // The watermark service decodes the upload once (under its own limits), marks it with a key that never
    // leaves it, and answers the file encoded once plus the thumbnail: no raw pixels cross the wire.
    const watermarkId = newId('watermark');
    const marked = await timed(deps, 'watermark', () =>
      deps.watermark.embedImage(
        { tenantId: target.tenantId, watermarkId, assetId: target.assetId, encoded: upload },
        { deadlineMs: 60_000 },
      ),
    );
    // The watermark service read its own output back and no setting gave a mark that reads: the upload is signed
    // as it would be without a watermark (no soft binding, so no watermark action in the manifest), and said so.
    if (marked.notEmbeddedReason)
      return {
        ...(await signPlainImage(deps, upload, mediaType, sign)),
        watermarkNotEmbedded: marked.notEmbeddedReason,
      };
    if (marked.encoded.length === 0 || marked.thumbnail.length === 0)
      throw new CairnError('cairn.internal_error', 'The watermark service returned no image.');
    const watermark = {
      id: watermarkId,
      payloadHex: marked.payloadHex,
      algorithm: marked.algorithm,
      keyId: marked.keyId,
    };
    const signed = await sign({
      asset: Buffer.from(marked.encoded),
      mimeType: mediaType,
      thumbnail: Buffer.from(marked.thumbnail),
      watermark,
    });
    return { signed, watermark };
  }
  return signPlainImage(deps, upload, mediaType, sign);
}

/** An image signed without a watermark: decoded and re-encoded here, with its thumbnail. */
async function signPlainImage(
  deps: PipelineDeps,
  upload: Buffer,
  mediaType: ImageMediaType,
  sign: SignWithC2pa,
): Promise<Produced> {
  let image;
  try {
    image = await timed(deps, 'decode', () => decodeImage(upload, mediaType, deps.mediaLimits.imagePixels));
  } catch {
    throw new CairnError('cairn.sign.unsupported_mime', `The file looks like ${mediaType} but cannot be decoded.`);
  }
  const plain = image;
  const [encoded, thumbnail] = await timed(deps, 'encode', () =>
    Promise.all([encodeImage(plain, mediaType), makeThumbnail(plain)]),
  );
  return { signed: await sign({ asset: encoded, mimeType: mediaType, thumbnail }) };
}
