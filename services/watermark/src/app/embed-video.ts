import { CairnError } from '@cairn/errors';
import { FfmpegError } from '@cairn/media';
import { CAIRN_SYNC_V2_NAME } from '../domain/image/cairn-sync-v2.js';
import { keyedPayloadFor, payloadHex } from '../domain/payload.js';
import { checkAnswerSize, inWorker, type WatermarkDeps } from './deps.js';
import { keyOf } from './marks.js';
import { markAudioTrack } from './video-audio-track.js';
import { detectVideoMark, markVideo, type MarkedVideo, type VideoMarkProgress } from './video-watermark.js';
import { readAudioMark } from './detect-audio.js';
import type { WatermarkKey } from '../domain/keys.js';

export interface EmbedVideoInput {
  tenantId: string;
  watermarkId: string;
  assetId: string;
  /** The video file as the caller has it. */
  encoded: Uint8Array;
}

/**
 * Embeds a registered mark in every frame of a video (cairn-sync-v2 under the current key, the image payload
 * scheme) and answers the file re-encoded like the upload: probed under the media limits, the mark recorded
 * (idempotent on its id) once the upload is accepted, frames marked in the worker pool as they stream through.
 */
export async function embedVideo(
  deps: WatermarkDeps,
  input: EmbedVideoInput,
  onProgress?: (progress: VideoMarkProgress) => void,
) {
  const key = await videoKeyFor(deps, input);
  const payload = keyedPayloadFor(key.secret, input.watermarkId);
  const hex = payloadHex(payload);
  const marked = await markAndRecord(deps, input, key, payload, onProgress);
  // The sound carries the same payload (cairn-audio-wm-v3): a copy whose frames lost the mark still names the asset.
  const withAudio = await inWorker(deps.logger, 'video audio track embedding', () =>
    markAudioTrack(deps, marked.encoded, marked.mediaType, payload, key),
  );
  const encoded = withAudio?.encoded ?? marked.encoded;
  checkAnswerSize('video', encoded.length);
  const { mediaType, width, height, frames, crf } = marked;
  // Read back before answering, as DetectVideo reads a file (its frames, then its sound), under the mark's key: a
  // mark that reads in neither is not answered, and the signer signs the upload unmarked.
  if (!(await readsBack(deps, encoded, key, hex))) {
    const notEmbeddedReason = unreadReason(marked);
    deps.logger.warn(
      { watermark_id: input.watermarkId, asset_id: input.assetId, reason: notEmbeddedReason },
      'video mark not embedded',
    );
    const unmarked = { encoded: new Uint8Array(0), payloadHex: '', psnrDb: 0, algorithm: '', keyId: '' };
    return { ...unmarked, mediaType, width, height, frames, crf, notEmbeddedReason };
  }
  // What the mark is checked against when a copy names the asset (the first description of the id stays).
  await deps.registry.describe(input.tenantId, input.watermarkId, marked.content);
  return {
    notEmbeddedReason: '',
    encoded,
    payloadHex: hex,
    psnrDb: marked.psnrDb,
    algorithm: CAIRN_SYNC_V2_NAME,
    keyId: key.kid,
    mediaType,
    width,
    height,
    frames,
    crf,
  };
}

/**
 * The key the mark is written under: the current one, or for a retry of a recorded id the key it was recorded
 * with (the same mark again). An id recorded for another algorithm is not a video mark's.
 */
async function videoKeyFor(deps: WatermarkDeps, input: EmbedVideoInput): Promise<WatermarkKey> {
  const existing = await deps.registry.findById(input.tenantId, input.watermarkId);
  if (existing && existing.algorithm !== CAIRN_SYNC_V2_NAME)
    throw new CairnError(
      'cairn.sign.idempotency_conflict',
      `watermark_id ${input.watermarkId} is already registered for a ${existing.algorithm} mark; use a new watermark id`,
    );
  const key = existing ? keyOf(deps.keyring, existing) : deps.keyring.current;
  if (!key) throw new CairnError('cairn.internal_error', 'a video mark needs a watermark key');
  return key;
}

/** The frames marked in the worker pool, the mark recorded once the upload is probed and accepted. */
async function markAndRecord(
  deps: WatermarkDeps,
  input: EmbedVideoInput,
  key: WatermarkKey,
  payload: Uint8Array,
  onProgress: ((progress: VideoMarkProgress) => void) | undefined,
): Promise<MarkedVideo> {
  const { registry, mediaLimits, pool, logger } = deps;
  const { tenantId, watermarkId, assetId } = input;
  return inWorker(logger, 'video embedding', async () => {
    try {
      return await markVideo({ pool, codecs: deps.codecs, mediaLimits }, input.encoded, payload, key, {
        onProgress,
        // Probed (and refused for its format or size) before the registry is touched.
        accepted: async () => {
          await registry.record({
            watermarkId,
            payloadHex: payloadHex(payload),
            tenantId,
            assetId,
            algorithm: CAIRN_SYNC_V2_NAME,
            keyId: key.kid,
          });
        },
      });
    } catch (error) {
      // The upload's own decode failing (a corrupt or truncated file) is the caller's file, not our fault.
      if (error instanceof FfmpegError)
        throw new CairnError('cairn.validation.invalid_body', `the video could not be decoded: ${error.message}`);
      throw error;
    }
  });
}

/** Why a mark that does not read back was not embedded. */
function unreadReason(marked: MarkedVideo): string {
  return Math.min(marked.width, marked.height) < MIN_READ_SIDE
    ? `video too small: ${marked.width}×${marked.height}, and its sound (if any) did not carry the mark either`
    : 'the mark did not read back from the encoded video, in its frames or its sound';
}

/** Frames smaller than this on their short side are not searched by detection (video-watermark.ts). */
const MIN_READ_SIDE = 96;

/** Whether the payload `hex` reads from the encoded video's frames, or else from its sound, under `key`. */
async function readsBack(deps: WatermarkDeps, encoded: Uint8Array, key: WatermarkKey, hex: string): Promise<boolean> {
  const frames = await inWorker(deps.logger, 'video readback', () => detectVideoMark(deps, encoded, [key]));
  if (frames.outcome?.detection && payloadHex(frames.outcome.detection.payload) === hex) return true;
  const sound = await readAudioMark(deps, encoded, [key]);
  return sound.applicable && sound.outcome.detection !== null && payloadHex(sound.outcome.detection.payload) === hex;
}
