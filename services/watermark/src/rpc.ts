import type { GenService } from '@bufbuild/protobuf/codegenv2';
import { CairnError } from '@cairn/errors';
import type { Logger } from '@cairn/logging';
import type { MediaLimits } from '@cairn/media';
import type { watermarkV1 } from '@cairn/proto';
import type { ServiceImpl } from '@cairn/rpc';
import type { MarkRegistry } from './db/marks.js';
import { CAIRN_DCT_KEYED_V1_NAME } from './domain/image/cairn-dct-keyed-v1.js';
import { CAIRN_DCT_V1_NAME } from './domain/image/cairn-dct-v1.js';
import { CAIRN_SYNC_V2_NAME } from './domain/image/cairn-sync-v2.js';
import { compareContent } from './domain/image/content-registration.js';
import { NEW_KEYED_ALGORITHM } from './domain/image-tasks.js';
import type { KeyedAlgorithmName } from './domain/worker-protocol.js';
import { ImageRejectedError } from './domain/image/raw-image.js';
import type { Keyring, WatermarkKey } from './domain/keys.js';
import { keyedPayloadFor, PAYLOAD_BYTES, payloadFor, payloadHex } from './domain/payload.js';
import { PoolClosedError, type ImageWorkerPool } from './domain/pool.js';
import { requireId } from './domain/validation.js';
import { decodeForDetection, decodeForEmbedding, encodeMarked } from './adapters/image-codec.js';
import {
  ANALYSIS_RATE,
  decodeAudioForDetection,
  decodeAudioForEmbedding,
  encodeMarkedAudio,
} from './adapters/audio-codec.js';
import { audioPayloadFor, AUDIO_WM, CAIRN_AUDIO_WM_V1_NAME } from './domain/audio/cairn-audio-wm-v1.js';

type Methods = typeof watermarkV1.WatermarkService extends GenService<infer M> ? M : never;

export interface WatermarkDeps {
  readonly pool: ImageWorkerPool;
  readonly registry: MarkRegistry;
  /** The current key signs new marks; all keys (current first) are tried by detection, then cairn-dct-v1. */
  readonly keyring: Keyring;
  /** Smallest image side the algorithms embed into. */
  readonly minEmbedSize: number;
  /** What the service decodes at most (MEDIA_MAX_*): callers send files, and it decodes them under these. */
  readonly mediaLimits: MediaLimits;
  readonly logger: Logger;
}

/** cairn.watermark.v1.WatermarkService: embed a registered mark in pixels; detect one and resolve it. */
export function watermarkHandlers({
  pool,
  registry,
  keyring,
  minEmbedSize,
  mediaLimits,
  logger,
}: WatermarkDeps): ServiceImpl<Methods> {
  /** Worker failures as the caller should see them: its own bad image, a drain, or an internal error. */
  const inWorker = async <T>(what: string, work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (error) {
      if (error instanceof ImageRejectedError) throw new CairnError('cairn.validation.invalid_body', error.message);
      if (error instanceof PoolClosedError)
        throw new CairnError('cairn.unavailable', 'The watermark service is shutting down; retry.');
      logger.error({ err: error }, `${what} failed`);
      throw new CairnError('cairn.internal_error', `${what} failed`, {}, { cause: error });
    }
  };

  /**
   * A detected mark and the registry entry it resolves to. An entry counts only for a mark read the way it was
   * written: a keyed mark's payload is public (manifests carry it), so the keyless code stamping it, or a key that
   * is not the mark's, is not that mark.
   */
  const registeredMark = async (
    detection: { payload: Uint8Array; confidence: number },
    name: string,
    keyId: string | null,
  ) => {
    const hex = payloadHex(detection.payload);
    const found = await registry.findByPayload(hex);
    const mark = found && found.algorithm === name && found.keyId === keyId ? found : null;
    if (found && !mark)
      logger.warn(
        { algorithm: name, key_id: keyId, registered_algorithm: found.algorithm, registered_key_id: found.keyId },
        'a registered payload was read by another algorithm or key than it was embedded with; not reported as that mark',
      );
    const answer = {
      detected: true,
      applicable: true,
      payloadHex: hex,
      confidence: detection.confidence,
      registered: mark !== null,
      watermarkId: mark?.watermarkId ?? '',
      assetId: mark?.assetId ?? '',
      tenantId: mark?.tenantId ?? '',
      algorithm: name,
      keyId: keyId ?? '',
      keyless: name === CAIRN_DCT_V1_NAME,
    };
    return { answer, mark };
  };

  return {
    embedImage: async (request) => {
      const tenantId = requireId('tenant', request.tenantId, 'tenant_id');
      const watermarkId = requireId('watermark', request.watermarkId, 'watermark_id');
      const assetId = requireId('asset', request.assetId, 'asset_id');
      if (request.encoded.length === 0)
        throw new CairnError('cairn.validation.invalid_body', 'encoded (the image file) is required', {
          errors: [{ path: 'encoded', message: 'required' }],
        });
      // Decoded before the registry is touched: an image refused for its size or format records no mark.
      const { image, mediaType } = await decodeForEmbedding(request.encoded, mediaLimits);
      if (Math.min(image.width, image.height) < minEmbedSize) {
        throw new CairnError(
          'cairn.validation.invalid_body',
          `image is ${image.width}×${image.height}; a watermark needs at least ${minEmbedSize}×${minEmbedSize} pixels`,
          { errors: [{ path: 'encoded', message: 'too small' }] },
        );
      }
      // A retry of an id already recorded writes exactly that mark again (same algorithm, key and payload),
      // even if the current key has rotated since.
      const existing = await registry.findById(tenantId, watermarkId);
      const key = existing ? keyOf(existing) : keyring.current;
      const payload = key ? keyedPayloadFor(key.secret, watermarkId) : payloadFor(watermarkId);
      const hex = payloadHex(payload);
      // New ids get the current keyed algorithm; a retry writes what its id was recorded with.
      const algorithm = existing ? existing.algorithm : key ? NEW_KEYED_ALGORITHM : CAIRN_DCT_V1_NAME;
      // Recorded before the (expensive) embedding, so a refused id costs no CPU; a mark recorded and then
      // not delivered is harmless: the caller retries with the same id and gets the same payload.
      await registry.record({ watermarkId, payloadHex: hex, tenantId, assetId, algorithm, keyId: key?.kid ?? null });
      const outcome = await inWorker('embedding', () =>
        pool.embed(image, payload, key, isKeyedImageAlgorithm(algorithm) ? algorithm : undefined),
      );
      if (outcome.content) await registry.describe(tenantId, watermarkId, outcome.content);
      // One encode, here: the marked pixels never cross the wire, only the file the signer signs.
      const { encoded, thumbnail } = await encodeMarked(outcome.image, mediaType);
      if (encoded.length > MAX_ENCODED_ANSWER_BYTES) {
        throw new CairnError(
          'cairn.media.too_large',
          `The marked image encodes to ${encoded.length} bytes, more than the ${MAX_ENCODED_ANSWER_BYTES} this service answers with.`,
        );
      }
      return {
        encoded,
        thumbnail,
        width: outcome.image.width,
        height: outcome.image.height,
        payloadHex: hex,
        psnrDb: outcome.psnrDb,
        algorithm: outcome.algorithm,
        keyId: outcome.keyId ?? '',
      };
    },

    detectImage: async (request) => {
      if (request.encoded.length === 0)
        throw new CairnError('cairn.validation.invalid_body', 'encoded (the image file) is required', {
          errors: [{ path: 'encoded', message: 'required' }],
        });
      const image = await decodeForDetection(request.encoded, mediaLimits);
      // Too small to carry a mark: nothing to look for (not an error: verify goes on without the signal).
      if (Math.min(image.width, image.height) < MIN_DETECT_SIDE)
        return { detected: false, applicable: false, algorithm: NEW_KEYED_ALGORITHM };
      const {
        detection,
        algorithm: name,
        keyId,
        registered,
      } = await inWorker('detection', () => pool.detect(image, keyring.all));
      if (!detection) return { detected: false, applicable: true, algorithm: name };
      const { answer, mark } = await registeredMark(detection, name, keyId);
      // A registered v2 mark is also checked against what it was embedded in (the payload alone can be copied).
      if (!mark || !registered) return answer;
      const comparison = mark.content ? compareContent(registered, mark.content) : undefined;
      if (comparison)
        logger.debug(
          { watermark_id: mark.watermarkId, correlation: comparison.correlation, inside: comparison.inside },
          'content check of a cairn-sync-v2 mark',
        );
      // No description kept (its write failed after the embedding): unknown, and callers compare fingerprints.
      return comparison ? { ...answer, contentConsistent: comparison.consistent } : answer;
    },

    embedAudio: async (request) => {
      const tenantId = requireId('tenant', request.tenantId, 'tenant_id');
      const watermarkId = requireId('watermark', request.watermarkId, 'watermark_id');
      const assetId = requireId('asset', request.assetId, 'asset_id');
      if (request.encoded.length === 0)
        throw new CairnError('cairn.validation.invalid_body', 'encoded (the audio file) is required', {
          errors: [{ path: 'encoded', message: 'required' }],
        });
      // Decoded before the registry is touched: a file refused for its size or format records no mark.
      // Any length is marked (a clip shorter than one repetition, 1.5 s, carries a mark no detector can read
      // whole; its manifest and fingerprint still bind it).
      const decoded = await decodeAudioForEmbedding(request.encoded, mediaLimits);
      // A retry of an id already recorded writes exactly that mark again, under the key it was recorded with.
      const existing = await registry.findById(tenantId, watermarkId);
      if (existing && existing.algorithm !== CAIRN_AUDIO_WM_V1_NAME)
        throw new CairnError(
          'cairn.sign.idempotency_conflict',
          `watermark_id ${watermarkId} is already registered for a ${existing.algorithm} mark; use a new watermark id`,
        );
      const key = existing ? keyOf(existing) : keyring.current;
      if (!key) throw new CairnError('cairn.internal_error', 'an audio mark needs a watermark key');
      const payload = audioPayloadFor(key.secret, watermarkId);
      const hex = payloadHex(payload);
      await registry.record({
        watermarkId,
        payloadHex: hex,
        tenantId,
        assetId,
        algorithm: CAIRN_AUDIO_WM_V1_NAME,
        keyId: key.kid,
      });
      const { samples, sampleRate, channels } = {
        samples: decoded.samples,
        sampleRate: decoded.format.sampleRate,
        channels: decoded.format.channels,
      };
      const outcome = await inWorker('audio embedding', () =>
        pool.embedAudio({ samples, sampleRate, channels }, payload, key),
      );
      let encoded: Buffer;
      try {
        encoded = await encodeMarkedAudio(outcome.samples, decoded.format);
      } catch (error) {
        logger.error({ err: error, format: decoded.format }, 'encoding the marked audio failed');
        throw new CairnError('cairn.internal_error', 'encoding the marked audio failed', {}, { cause: error });
      }
      if (encoded.length > MAX_ENCODED_ANSWER_BYTES) {
        throw new CairnError(
          'cairn.media.too_large',
          `The marked audio encodes to ${encoded.length} bytes, more than the ${MAX_ENCODED_ANSWER_BYTES} this service answers with.`,
        );
      }
      return {
        encoded,
        payloadHex: hex,
        snrDb: outcome.snrDb,
        algorithm: outcome.algorithm,
        keyId: outcome.keyId,
        mediaType: decoded.format.mediaType,
        durationSeconds: decoded.format.seconds,
      };
    },

    detectAudio: async (request) => {
      if (request.encoded.length === 0)
        throw new CairnError('cairn.validation.invalid_body', 'encoded (the audio file) is required', {
          errors: [{ path: 'encoded', message: 'required' }],
        });
      const samples = await decodeAudioForDetection(request.encoded, mediaLimits);
      // No decodable audio, or shorter than one repetition: nothing to look for (verify goes on without the signal).
      if (!samples || samples.length < MIN_DETECT_AUDIO_SECONDS * ANALYSIS_RATE)
        return { detected: false, applicable: false, algorithm: CAIRN_AUDIO_WM_V1_NAME };
      const {
        detection,
        algorithm: name,
        keyId,
      } = await inWorker('audio detection', () => pool.detectAudio(samples, keyring.all));
      if (!detection) return { detected: false, applicable: true, algorithm: name };
      return (await registeredMark(detection, name, keyId)).answer;
    },

    resolvePayload: async (request) => {
      const hex = request.payloadHex.toLowerCase();
      if (!PAYLOAD_HEX.test(hex))
        throw new CairnError('cairn.validation.invalid_body', `payload_hex must be ${PAYLOAD_BYTES * 2} hex digits`);
      const mark = await registry.findByPayload(hex);
      // Public fields only: whose mark it is stays with the registry.
      return mark
        ? {
            registered: true,
            watermarkId: mark.watermarkId,
            assetId: mark.assetId,
            algorithm: mark.algorithm,
            keyId: mark.keyId ?? '',
            keyless: mark.algorithm === CAIRN_DCT_V1_NAME,
          }
        : { registered: false };
    },
  };

  /** The key an already recorded mark was written with: none for cairn-dct-v1, else one the service still holds. */
  function keyOf(mark: {
    readonly watermarkId: string;
    readonly algorithm: string;
    readonly keyId: string | null;
  }): WatermarkKey | undefined {
    if (mark.algorithm === CAIRN_DCT_V1_NAME) return undefined;
    const key = keyring.all.find((k) => k.kid === mark.keyId);
    if (!key)
      throw new CairnError(
        'cairn.sign.idempotency_conflict',
        `watermark_id ${mark.watermarkId} was embedded under a watermark key this service no longer holds; use a new watermark id`,
      );
    return key;
  }
}

function isKeyedImageAlgorithm(name: string): name is KeyedAlgorithmName {
  return name === CAIRN_SYNC_V2_NAME || name === CAIRN_DCT_KEYED_V1_NAME;
}

/** Shortest audio DetectAudio reads: one repetition and a frame (the grid may start anywhere in it). */
const MIN_DETECT_AUDIO_SECONDS = ((AUDIO_WM.period + 1) * AUDIO_WM.frame) / AUDIO_WM.sampleRate;
/** Below this side no algorithm has a grid to read (callers skipped such images before detection moved here). */
const MIN_DETECT_SIDE = 64;
/** Under the 128 MiB gRPC message limit (packages/rpc), with room for the thumbnail and the other fields. */
const MAX_ENCODED_ANSWER_BYTES = 120 * 1024 * 1024;

const PAYLOAD_HEX = new RegExp(`^[0-9a-f]{${PAYLOAD_BYTES * 2}}$`);
