import { CairnError } from '@cairn/errors';
import { decodeForEmbedding, encodeMarked } from '../adapters/image-codec.js';
import { CAIRN_DCT_V1_NAME } from '../domain/image/cairn-dct-v1.js';
import { NEW_KEYED_ALGORITHM } from '../domain/image-tasks.js';
import { keyedPayloadFor, payloadFor, payloadHex } from '../domain/payload.js';
import { checkAnswerSize, inWorker, type WatermarkDeps } from './deps.js';
import { isKeyedImageAlgorithm, keyOf } from './marks.js';

export interface EmbedImageInput {
  tenantId: string;
  watermarkId: string;
  assetId: string;
  /** The image file as the caller has it. */
  encoded: Uint8Array;
}

/**
 * Embeds a registered mark in an image file and answers the marked file: decode under the media limits, record
 * the mark (idempotent on its id), embed in a worker, keep what a cairn-sync-v2 mark was embedded in, encode once.
 */
export async function embedImage(deps: WatermarkDeps, input: EmbedImageInput) {
  const { registry, keyring, minEmbedSize, mediaLimits, pool, logger } = deps;
  const { tenantId, watermarkId, assetId } = input;
  // Decoded before the registry is touched: an image refused for its size or format records no mark.
  const { image, mediaType } = await decodeForEmbedding(input.encoded, mediaLimits);
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
  const key = existing ? keyOf(keyring, existing) : keyring.current;
  const payload = key ? keyedPayloadFor(key.secret, watermarkId) : payloadFor(watermarkId);
  const hex = payloadHex(payload);
  // New ids get the current keyed algorithm; a retry writes what its id was recorded with.
  const algorithm = existing ? existing.algorithm : key ? NEW_KEYED_ALGORITHM : CAIRN_DCT_V1_NAME;
  // Recorded before the (expensive) embedding, so a refused id costs no CPU; a mark recorded and then
  // not delivered is harmless: the caller retries with the same id and gets the same payload.
  await registry.record({ watermarkId, payloadHex: hex, tenantId, assetId, algorithm, keyId: key?.kid ?? null });
  const outcome = await inWorker(logger, 'embedding', () =>
    pool.embed(image, payload, key, isKeyedImageAlgorithm(algorithm) ? algorithm : undefined),
  );
  if (outcome.content) await registry.describe(tenantId, watermarkId, outcome.content);
  // One encode, here: the marked pixels never cross the wire, only the file the signer signs.
  const { encoded, thumbnail } = await encodeMarked(outcome.image, mediaType);
  checkAnswerSize('image', encoded.length);
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
}
