import { CairnError } from '@cairn/errors';
import { decodeAudioForEmbedding, encodeMarkedAudio } from '../adapters/audio-codec.js';
import { audioPayloadFor, CAIRN_AUDIO_WM_V1_NAME } from '../domain/audio/cairn-audio-wm-v1.js';
import { CAIRN_AUDIO_WM_V3_NAME } from '../domain/audio/cairn-audio-wm-v3.js';
import type { AudioMarkAlgorithm } from '../domain/audio-tasks.js';
import { payloadHex } from '../domain/payload.js';
import { checkAnswerSize, inWorker, type WatermarkDeps } from './deps.js';
import { keyOf } from './marks.js';

export interface EmbedAudioInput {
  tenantId: string;
  watermarkId: string;
  assetId: string;
  /** The audio file as the caller has it. */
  encoded: Uint8Array;
}

/**
 * Embeds a registered cairn-audio-wm-v3 mark (always keyed; v1 again for an id recorded with v1) and answers the marked file in its own container and
 * quality: decode under the media limits, record the mark (idempotent on its id), embed in a worker, encode.
 */
export async function embedAudio(deps: WatermarkDeps, input: EmbedAudioInput) {
  const { registry, keyring, mediaLimits, pool, logger } = deps;
  const { tenantId, watermarkId, assetId } = input;
  // Decoded before the registry is touched: a file refused for its size or format records no mark.
  // Any length is marked (a clip shorter than one repetition, 1.5 s, carries a mark no detector can read
  // whole; its manifest and fingerprint still bind it).
  const decoded = await decodeAudioForEmbedding(input.encoded, mediaLimits);
  // A retry of an id already recorded writes exactly that mark again, with the algorithm and key it was recorded with.
  const existing = await registry.findById(tenantId, watermarkId);
  const algorithm = existing ? writtenAgain(existing.algorithm) : CAIRN_AUDIO_WM_V3_NAME;
  if (!algorithm)
    throw new CairnError(
      'cairn.sign.idempotency_conflict',
      `watermark_id ${watermarkId} is already registered for a ${existing?.algorithm} mark; use a new watermark id`,
    );
  const key = existing ? keyOf(keyring, existing) : keyring.current;
  if (!key) throw new CairnError('cairn.internal_error', 'an audio mark needs a watermark key');
  const payload = audioPayloadFor(key.secret, watermarkId);
  const hex = payloadHex(payload);
  await registry.record({
    watermarkId,
    payloadHex: hex,
    tenantId,
    assetId,
    algorithm,
    keyId: key.kid,
  });
  const { samples, sampleRate, channels } = {
    samples: decoded.samples,
    sampleRate: decoded.format.sampleRate,
    channels: decoded.format.channels,
  };
  const outcome = await inWorker(logger, 'audio embedding', () =>
    pool.embedAudio({ samples, sampleRate, channels }, payload, key, algorithm),
  );
  let encoded: Buffer;
  try {
    encoded = await encodeMarkedAudio(outcome.samples, decoded.format);
  } catch (error) {
    logger.error({ err: error, format: decoded.format }, 'encoding the marked audio failed');
    throw new CairnError('cairn.internal_error', 'encoding the marked audio failed', {}, { cause: error });
  }
  checkAnswerSize('audio', encoded.length);
  return {
    encoded,
    payloadHex: hex,
    snrDb: outcome.snrDb,
    algorithm: outcome.algorithm,
    keyId: outcome.keyId,
    mediaType: decoded.format.mediaType,
    durationSeconds: decoded.format.seconds,
  };
}

/** The audio algorithm a recorded id is written with again; null when the id names another kind of mark. */
function writtenAgain(recorded: string): AudioMarkAlgorithm | null {
  return recorded === CAIRN_AUDIO_WM_V3_NAME || recorded === CAIRN_AUDIO_WM_V1_NAME ? recorded : null;
}
