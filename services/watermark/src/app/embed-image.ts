import { CairnError } from '@cairn/errors';
import { inSpan } from '@cairn/telemetry';
import { decodeForEmbedding, encodeMarked } from '../adapters/image-codec.js';
import { CAIRN_DCT_V1_NAME } from '../domain/image/cairn-dct-v1.js';
import { NEW_KEYED_ALGORITHM } from '../domain/image-tasks.js';
import { keyedPayloadFor, payloadFor, payloadHex } from '../domain/payload.js';
import { checkAnswerSize, inWorker, type WatermarkDeps } from './deps.js';
import { isKeyedImageAlgorithm, keyOf } from './marks.js';
import type { RawImage } from '../domain/image/raw-image.js';
import type { MarkRecord } from '../store/marks.js';

export interface EmbedImageInput {
  tenantId: string;
  watermarkId: string;
  assetId: string;
  /** The image file as the caller has it. */
  encoded: Uint8Array;
}

/**
 * Embeds a registered mark in an image file and answers the marked file: decode under the media limits, record
 * the mark (idempotent on its id) while a worker embeds it, keep what a cairn-sync-v2 mark was embedded in, encode
 * once.
 */
export async function embedImage(deps: WatermarkDeps, input: EmbedImageInput) {
  const { registry, keyring, minEmbedSize, mediaLimits, pool, logger } = deps;
  const { tenantId, watermarkId, assetId } = input;
  // Decoded before the registry is touched: an image refused for its size or format records no mark.
  const { image, mediaType } = await inSpan('watermark.decode', () => decodeForEmbedding(input.encoded, mediaLimits));
  if (Math.min(image.width, image.height) < minEmbedSize) {
    throw new CairnError(
      'cairn.validation.invalid_body',
      `image is ${image.width}×${image.height}; a watermark needs at least ${minEmbedSize}×${minEmbedSize} pixels`,
      { errors: [{ path: 'encoded', message: 'too small' }] },
    );
  }
  // A retry of an id already recorded writes exactly that mark again (same algorithm, key and payload), even if
  // the current key has rotated since. Read and recorded in one transaction; a mark recorded and then not
  // delivered is harmless: the caller retries with the same id and gets the same payload.
  const planFor = (existing: MarkRecord | null) => {
    const key = existing ? keyOf(keyring, existing) : keyring.current;
    const payload = key ? keyedPayloadFor(key.secret, watermarkId) : payloadFor(watermarkId);
    // New ids get the current keyed algorithm; a retry writes what its id was recorded with.
    const algorithm = existing ? existing.algorithm : key ? NEW_KEYED_ALGORITHM : CAIRN_DCT_V1_NAME;
    return { key, payload, hex: payloadHex(payload), algorithm };
  };
  const embedWith = (pixels: RawImage, plan: ReturnType<typeof planFor>) =>
    inSpan('watermark.embed', () =>
      inWorker(logger, 'embedding', () =>
        pool.embed(pixels, plan.payload, plan.key, isKeyedImageAlgorithm(plan.algorithm) ? plan.algorithm : undefined),
      ),
    );
  // The embedding starts at once with a new id's plan, while the registry records the mark (a round trip that
  // used to run before it). The registry decides: a refused id's embedding is discarded, and a retry of an id
  // recorded under another key or algorithm (rare: after a key rotation) is embedded again as recorded, from a
  // fresh decode (the pixels went to the first embedding's worker).
  const fresh = planFor(null);
  const embedding = embedWith(image, fresh);
  embedding.catch(() => undefined); // read below, unless the registry refused the id first
  const { plan } = await inSpan('watermark.registry.record', () =>
    registry.recordFor(tenantId, watermarkId, (existing) => {
      const plan = planFor(existing);
      return {
        mark: {
          watermarkId,
          payloadHex: plan.hex,
          tenantId,
          assetId,
          algorithm: plan.algorithm,
          keyId: plan.key?.kid ?? null,
        },
        plan,
      };
    }),
  );
  const { hex } = plan;
  const asPlanned = plan.hex === fresh.hex && plan.algorithm === fresh.algorithm && plan.key?.kid === fresh.key?.kid;
  const outcome = asPlanned
    ? await embedding
    : await embedWith((await decodeForEmbedding(input.encoded, mediaLimits)).image, plan);
  const content = outcome.content;
  // One encode, here: the marked pixels never cross the wire, only the file the signer signs. The description is
  // kept meanwhile (a database round trip while sharp encodes on its own threads); the answer waits for both.
  const [{ encoded, thumbnail }] = await Promise.all([
    inSpan('watermark.encode', () => encodeMarked(outcome.image, mediaType)),
    content
      ? inSpan('watermark.registry.describe', () => registry.describe(tenantId, watermarkId, content))
      : Promise.resolve(),
  ]);
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
