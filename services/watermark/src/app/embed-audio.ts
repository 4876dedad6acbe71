import { CairnError } from '@cairn/errors';
import { ANALYSIS_RATE } from '../domain/media-formats.js';
import { audioPayloadFor, CAIRN_AUDIO_WM_V1_NAME } from '../domain/audio/cairn-audio-wm-v1.js';
import { AUDIO_WM_V3, CAIRN_AUDIO_WM_V3_NAME } from '../domain/audio/cairn-audio-wm-v3.js';
import type { WatermarkKey } from '../domain/keys.js';
import type { AudioMarkAlgorithm } from '../domain/audio-tasks.js';
import { payloadHex } from '../domain/payload.js';
import { checkAnswerSize, inWorker, type WatermarkDeps } from './deps.js';
import { MIN_DETECT_AUDIO_SECONDS } from './detect-audio.js';
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
  const { registry, keyring, mediaLimits, pool, logger, codecs } = deps;
  const { tenantId, watermarkId, assetId } = input;
  // Decoded before the registry is touched: a file refused for its size or format records no mark.
  // Any length is marked (a clip shorter than one repetition, 1.5 s, carries a mark no detector can read
  // whole; its manifest and fingerprint still bind it).
  const decoded = await codecs.decodeAudioForEmbedding(input.encoded, mediaLimits);
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
    encoded = await codecs.encodeMarkedAudio(outcome.samples, decoded.format);
  } catch (error) {
    logger.error({ err: error, format: decoded.format }, 'encoding the marked audio failed');
    throw new CairnError('cairn.internal_error', 'encoding the marked audio failed', {}, { cause: error });
  }
  checkAnswerSize('audio', encoded.length);
  // Read back before answering: the file the signer will sign, decoded and searched as a verify of it would be,
  // under the mark's own key. A mark that does not read is not answered: the signer signs the upload unmarked.
  const notEmbeddedReason = await readBackFailure(deps, encoded, { key, hex, algorithm }, decoded.format.seconds);
  if (notEmbeddedReason) {
    logger.warn({ watermark_id: watermarkId, asset_id: assetId, reason: notEmbeddedReason }, 'audio mark not embedded');
    return {
      encoded: new Uint8Array(0),
      payloadHex: '',
      snrDb: 0,
      algorithm: '',
      keyId: '',
      mediaType: decoded.format.mediaType,
      durationSeconds: decoded.format.seconds,
      notEmbeddedReason,
    };
  }
  return {
    encoded,
    payloadHex: hex,
    snrDb: outcome.snrDb,
    algorithm: outcome.algorithm,
    keyId: outcome.keyId,
    mediaType: decoded.format.mediaType,
    durationSeconds: decoded.format.seconds,
    notEmbeddedReason: '',
  };
}

/**
 * Why the mark `plan` wrote does not read from `encoded` (decoded and searched as DetectAudio does, under the
 * mark's key only), or '' when it reads with its payload.
 */
async function readBackFailure(
  deps: WatermarkDeps,
  encoded: Uint8Array,
  plan: { key: WatermarkKey; hex: string; algorithm: string },
  seconds: number,
): Promise<string> {
  const samples = await deps.codecs.decodeAudioForDetection(encoded, deps.mediaLimits, AUDIO_WM_V3.detectMaxSeconds);
  if (!samples || samples.length < MIN_DETECT_AUDIO_SECONDS * ANALYSIS_RATE)
    return `audio too short: ${seconds.toFixed(1)} s, the mark is specified for ${MIN_DETECT_AUDIO_SECONDS.toFixed(1)} s and more`;
  const outcome = await inWorker(deps.logger, 'audio readback', () => deps.pool.detectAudio(samples, [plan.key]));
  if (outcome.detection && outcome.algorithm === plan.algorithm && payloadHex(outcome.detection.payload) === plan.hex)
    return '';
  return 'the mark did not read back from the encoded audio (content such as near-silence or a pure tone carries too little of it)';
}

/** The audio algorithm a recorded id is written with again; null when the id names another kind of mark. */
function writtenAgain(recorded: string): AudioMarkAlgorithm | null {
  return recorded === CAIRN_AUDIO_WM_V3_NAME || recorded === CAIRN_AUDIO_WM_V1_NAME ? recorded : null;
}
