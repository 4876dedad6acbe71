import { CairnError } from '@cairn/errors';
import { inSpan } from '@cairn/telemetry';
import { decodeForDetection, decodeForEmbedding, encodeMarked } from '../adapters/image-codec.js';
import { CAIRN_DCT_V1_NAME } from '../domain/image/cairn-dct-v1.js';
import { CAIRN_SYNC_V2_NAME } from '../domain/image/cairn-sync-v2.js';
import { READBACK_LEVELS, startLevel, unreadableReason } from '../domain/image/readback.js';
import { NEW_KEYED_ALGORITHM } from '../domain/image-tasks.js';
import { keyedPayloadFor, payloadFor, payloadHex } from '../domain/payload.js';
import { checkAnswerSize, inWorker, type WatermarkDeps } from './deps.js';
import { DetectionMemo } from './detection-memo.js';
import { isKeyedImageAlgorithm, keyOf } from './marks.js';
import type { RawImage } from '../domain/image/raw-image.js';
import type { MarkRecord } from '../store/marks.js';
import type { WatermarkKey } from '../domain/keys.js';

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
 * once, and read the mark back from that file. A cairn-sync-v2 mark that does not read is embedded again at the
 * next strength level (SYNC_STRENGTH_LEVELS, all within the fidelity floor); when none reads the answer carries no
 * image and says why (`notEmbeddedReason`), and the signer signs the upload unmarked.
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
  const embedWith = (pixels: RawImage, plan: ReturnType<typeof planFor>, level = 0) =>
    inSpan('watermark.embed', () =>
      inWorker(logger, 'embedding', () =>
        pool.embed(
          pixels,
          plan.payload,
          plan.key,
          isKeyedImageAlgorithm(plan.algorithm) ? plan.algorithm : undefined,
          level,
        ),
      ),
    );
  // The embedding starts at once with a new id's plan, while the registry records the mark (a round trip that
  // used to run before it). The registry decides: a refused id's embedding is discarded, and a retry of an id
  // recorded under another key or algorithm (rare: after a key rotation) is embedded again as recorded, from a
  // fresh decode (the pixels went to the first embedding's worker).
  const fresh = planFor(null);
  // Content-adaptive: flat content starts at the flattest level (domain/image/readback.ts). Measured on the pixels
  // before they go to the worker; a cairn-sync-v2 choice only (the v1 marks have no levels).
  const first = fresh.algorithm === CAIRN_SYNC_V2_NAME ? startLevel(image) : 0;
  const embedding = embedWith(image, fresh, first);
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
  const freshPixels = async () => (await decodeForEmbedding(input.encoded, mediaLimits)).image;
  const from = plan.algorithm === CAIRN_SYNC_V2_NAME ? first : 0;
  let outcome = asPlanned ? await embedding : await embedWith(await freshPixels(), plan, from);
  // Only cairn-sync-v2 has stronger settings to escalate to; a retried v1 id is written as it was, once.
  const levels = plan.algorithm === CAIRN_SYNC_V2_NAME ? READBACK_LEVELS : 1;
  for (let level = from; ;) {
    const content = outcome.content;
    // One encode per try, here: the marked pixels never cross the wire, only the file the signer signs. The
    // description is kept meanwhile (a database round trip while sharp encodes on its own threads); it is the
    // content the mark was put on, the same at every level, and the first description stays.
    const [{ encoded, thumbnail }] = await Promise.all([
      inSpan('watermark.encode', () => encodeMarked(outcome.image, mediaType)),
      content && level === from
        ? inSpan('watermark.registry.describe', () => registry.describe(tenantId, watermarkId, content))
        : Promise.resolve(),
    ]);
    checkAnswerSize('image', encoded.length);
    // Read back before answering: the file the signer will sign, decoded and searched as a verify of it would be
    // (the same decode, the same detector, under the mark's own key). A mark that does not read is never answered.
    if (await readsBack(deps, encoded, plan)) {
      return {
        encoded,
        thumbnail,
        width: outcome.image.width,
        height: outcome.image.height,
        payloadHex: hex,
        psnrDb: outcome.psnrDb,
        algorithm: outcome.algorithm,
        keyId: outcome.keyId ?? '',
        strengthLevel: level,
        notEmbeddedReason: '',
      };
    }
    level++;
    if (level >= levels) break;
    logger.info({ watermark_id: watermarkId, level }, 'image mark did not read back; embedding it stronger');
    outcome = await embedWith(await freshPixels(), plan, level);
  }
  // No setting reads: the sign goes on without the mark (the signer encodes the upload itself). The registry row
  // stays: it names an asset no file carries, so no detection ever resolves to it.
  const reason = unreadableReason(await freshPixels());
  logger.warn(
    { watermark_id: watermarkId, asset_id: assetId, reason },
    'image mark not embedded: it does not read back',
  );
  return {
    encoded: new Uint8Array(0),
    thumbnail: new Uint8Array(0),
    width: image.width,
    height: image.height,
    payloadHex: '',
    psnrDb: 0,
    algorithm: '',
    keyId: '',
    strengthLevel: 0,
    notEmbeddedReason: reason,
  };
}

/** Whether the mark `plan` wrote reads from `encoded` (decoded as a verify decodes it), with its payload. */
async function readsBack(
  deps: WatermarkDeps,
  encoded: Uint8Array,
  plan: { key: WatermarkKey | undefined; hex: string; algorithm: string },
): Promise<boolean> {
  const image = await inSpan('watermark.readback.decode', () => decodeForDetection(encoded, deps.mediaLimits));
  // Taken before the search (the pixels are handed over to the worker): from the file's bytes for JPEG and PNG,
  // which the signed copy shares less its manifest store, else from the pixels.
  const memoKey = DetectionMemo.unsignedKeyOf(encoded) ?? DetectionMemo.pixelKeyOf(image);
  const outcome = await inSpan('watermark.readback', () =>
    inWorker(deps.logger, 'readback', () => deps.pool.detect(image, plan.key ? [plan.key] : [])),
  );
  const reads =
    outcome.detection !== null &&
    outcome.algorithm === plan.algorithm &&
    payloadHex(outcome.detection.payload) === plan.hex;
  // This reading is the stored verdict's: the signed file has these pixels, and a search under every key finds the
  // same mark first when it is the current key's (the v1 marks tried before it never read a v2 mark). Kept only then.
  if (reads && plan.key?.kid === deps.keyring.current?.kid) deps.detections.set(memoKey, { applicable: true, outcome });
  return reads;
}
