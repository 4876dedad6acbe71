import { CairnError } from '@cairn/errors';
import { FfmpegError } from '@cairn/media';
import { CAIRN_SYNC_V2_NAME } from '../domain/image/cairn-sync-v2.js';
import { keyedPayloadFor, payloadHex } from '../domain/payload.js';
import { checkAnswerSize, inWorker, type WatermarkDeps } from './deps.js';
import { keyOf } from './marks.js';
import { markAudioTrack } from './video-audio-track.js';
import { detectVideoMark, markVideo, type VideoMarkProgress } from './video-watermark.js';
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
  const { registry, keyring, mediaLimits, pool, logger } = deps;
  const { tenantId, watermarkId, assetId } = input;
  // A retry of a recorded id writes the same mark under the key it was recorded with.
  const existing = await registry.findById(tenantId, watermarkId);
  if (existing && existing.algorithm !== CAIRN_SYNC_V2_NAME)
    throw new CairnError(
      'cairn.sign.idempotency_conflict',
      `watermark_id ${watermarkId} is already registered for a ${existing.algorithm} mark; use a new watermark id`,
    );
  const key = existing ? keyOf(keyring, existing) : keyring.current;
  if (!key) throw new CairnError('cairn.internal_error', 'a video mark needs a watermark key');
  const payload = keyedPayloadFor(key.secret, watermarkId);
  const hex = payloadHex(payload);
  const marked = await inWorker(logger, 'video embedding', async () => {
    try {
      return await markVideo({ pool, mediaLimits }, input.encoded, payload, key, {
        onProgress,
        // Probed (and refused for its format or size) before the registry is touched.
        accepted: async () => {
          await registry.record({
            watermarkId,
            payloadHex: hex,
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
  // The sound carries the same payload (cairn-audio-wm-v3): a copy whose frames lost the mark still names the asset.
  const withAudio = await inWorker(logger, 'video audio track embedding', () =>
    markAudioTrack(deps, marked.encoded, marked.mediaType, payload, key),
  );
  const encoded = withAudio?.encoded ?? marked.encoded;
  checkAnswerSize('video', encoded.length);
  // Read back before answering, as DetectVideo reads a file (its frames, then its sound), under the mark's key: a
  // mark that reads in neither is not answered, and the signer signs the upload unmarked.
  if (!(await readsBack(deps, encoded, key, hex))) {
    const notEmbeddedReason =
      Math.min(marked.width, marked.height) < MIN_READ_SIDE
        ? `video too small: ${marked.width}×${marked.height}, and its sound (if any) did not carry the mark either`
        : 'the mark did not read back from the encoded video, in its frames or its sound';
    logger.warn({ watermark_id: watermarkId, asset_id: assetId, reason: notEmbeddedReason }, 'video mark not embedded');
    return {
      encoded: new Uint8Array(0),
      payloadHex: '',
      psnrDb: 0,
      algorithm: '',
      keyId: '',
      mediaType: marked.mediaType,
      width: marked.width,
      height: marked.height,
      frames: marked.frames,
      crf: marked.crf,
      notEmbeddedReason,
    };
  }
  return {
    notEmbeddedReason: '',
    encoded,
    payloadHex: hex,
    psnrDb: marked.psnrDb,
    algorithm: CAIRN_SYNC_V2_NAME,
    keyId: key.kid,
    mediaType: marked.mediaType,
    width: marked.width,
    height: marked.height,
    frames: marked.frames,
    crf: marked.crf,
  };
}

/** Frames smaller than this on their short side are not searched by detection (video-watermark.ts). */
const MIN_READ_SIDE = 96;

/** Whether the payload `hex` reads from the encoded video's frames, or else from its sound, under `key`. */
async function readsBack(deps: WatermarkDeps, encoded: Uint8Array, key: WatermarkKey, hex: string): Promise<boolean> {
  const frames = await inWorker(deps.logger, 'video readback', () =>
    detectVideoMark({ pool: deps.pool, mediaLimits: deps.mediaLimits }, encoded, [key]),
  );
  if (frames.outcome?.detection && payloadHex(frames.outcome.detection.payload) === hex) return true;
  const sound = await readAudioMark(deps, encoded, [key]);
  return sound.applicable && sound.outcome.detection !== null && payloadHex(sound.outcome.detection.payload) === hex;
}
