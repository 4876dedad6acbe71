import { CairnError } from '@cairn/errors';
import { inSpan } from '@cairn/telemetry';
import type { DecodedForEmbedding } from '../domain/media-formats.js';
import { CAIRN_DCT_V1_NAME } from '../domain/image/cairn-dct-v1.js';
import { CAIRN_SYNC_V2_NAME } from '../domain/image/cairn-sync-v2.js';
import { READBACK_LEVELS, unreadableReason } from '../domain/image/readback.js';
import { NEW_KEYED_ALGORITHM } from '../domain/image-tasks.js';
import { keyedPayloadFor, payloadFor, payloadHex } from '../domain/payload.js';
import { checkAnswerSize, inWorker, type WatermarkDeps } from './deps.js';
import { DetectionMemo } from './detection-memo.js';
import { isKeyedImageAlgorithm, keyOf } from './marks.js';
import type { RawImage } from '../domain/image/raw-image.js';
import type { MarkRecord } from './ports.js';
import type { Keyring, WatermarkKey } from '../domain/keys.js';
import type { EmbedOutcome } from '../domain/worker-protocol.js';

export interface EmbedImageInput {
  tenantId: string;
  watermarkId: string;
  assetId: string;
  /** The image file as the caller has it. */
  encoded: Uint8Array;
}

/** The marked file and how it was marked; with no mark that reads, no image and why (`notEmbeddedReason`). */
export interface EmbeddedImage {
  encoded: Uint8Array;
  thumbnail: Uint8Array;
  width: number;
  height: number;
  payloadHex: string;
  psnrDb: number;
  algorithm: string;
  keyId: string;
  strengthLevel: number;
  notEmbeddedReason: string;
}

/** What a mark is written with: its key (none for cairn-dct-v1), its payload, and the algorithm. */
interface MarkPlan {
  key: WatermarkKey | undefined;
  payload: Uint8Array;
  hex: string;
  algorithm: string;
}

/** A plan's embedding as the worker answered it, and the strength level it was embedded at. */
interface Embedded {
  plan: MarkPlan;
  outcome: EmbedOutcome;
  level: number;
}

/**
 * Embeds a registered mark in an image file and answers the marked file: decode under the media limits, record
 * the mark (idempotent on its id) while a worker embeds it, keep what a cairn-sync-v2 mark was embedded in, encode
 * once, and read the mark back from that file. A cairn-sync-v2 mark that does not read is embedded again at the
 * next strength level (SYNC_STRENGTH_LEVELS, all within the fidelity floor); when none reads the answer carries no
 * image and says why (`notEmbeddedReason`), and the signer signs the upload unmarked.
 */
export async function embedImage(deps: WatermarkDeps, input: EmbedImageInput): Promise<EmbeddedImage> {
  // Decoded before the registry is touched: an image refused for its size or format records no mark.
  const { image, mediaType } = await decodeMarkable(deps, input.encoded);
  const embedded = await recordWhileEmbedding(deps, input, image);
  return (await firstThatReadsBack(deps, input, mediaType, embedded)) ?? (await notEmbedded(deps, input, image));
}

/** The upload decoded for embedding, refused when it is too small to carry a mark. */
async function decodeMarkable(deps: WatermarkDeps, encoded: Uint8Array): Promise<DecodedForEmbedding> {
  const { minEmbedSize, mediaLimits } = deps;
  const decoded = await inSpan('watermark.decode', () => deps.codecs.decodeForEmbedding(encoded, mediaLimits));
  const { image } = decoded;
  if (Math.min(image.width, image.height) < minEmbedSize) {
    throw new CairnError(
      'cairn.validation.invalid_body',
      `image is ${image.width}×${image.height}; a watermark needs at least ${minEmbedSize}×${minEmbedSize} pixels`,
      { errors: [{ path: 'encoded', message: 'too small' }] },
    );
  }
  return decoded;
}

/**
 * The plan for `watermarkId`. A retry of an id already recorded writes exactly that mark again (same algorithm,
 * key and payload), even if the current key has rotated since. Read and recorded in one transaction; a mark
 * recorded and then not delivered is harmless: the caller retries with the same id and gets the same payload.
 */
function planOf(keyring: Keyring, watermarkId: string, existing: MarkRecord | null): MarkPlan {
  const key = existing ? keyOf(keyring, existing) : keyring.current;
  const payload = key ? keyedPayloadFor(key.secret, watermarkId) : payloadFor(watermarkId);
  // New ids get the current keyed algorithm; a retry writes what its id was recorded with.
  const algorithm = existing ? existing.algorithm : key ? NEW_KEYED_ALGORITHM : CAIRN_DCT_V1_NAME;
  return { key, payload, hex: payloadHex(payload), algorithm };
}

/** `plan` embedded in `pixels` by a worker, at strength `level`. */
function embedPlan(
  deps: WatermarkDeps,
  pixels: RawImage,
  plan: MarkPlan,
  level: number | 'content' = 0,
): Promise<EmbedOutcome> {
  return inSpan('watermark.embed', () =>
    inWorker(deps.logger, 'embedding', () =>
      deps.pool.embed(
        pixels,
        plan.payload,
        plan.key,
        isKeyedImageAlgorithm(plan.algorithm) ? plan.algorithm : undefined,
        level,
      ),
    ),
  );
}

/** The upload decoded again: pixels handed to a worker are gone. */
async function freshPixels(deps: WatermarkDeps, input: EmbedImageInput): Promise<RawImage> {
  return (await deps.codecs.decodeForEmbedding(input.encoded, deps.mediaLimits)).image;
}

/**
 * The mark recorded and embedded. The embedding starts at once with a new id's plan, while the registry records
 * the mark (a round trip that used to run before it). The registry decides: a refused id's embedding is
 * discarded, and a retry of an id recorded under another key or algorithm (rare: after a key rotation) is
 * embedded again as recorded, from a fresh decode (the pixels went to the first embedding's worker).
 */
async function recordWhileEmbedding(deps: WatermarkDeps, input: EmbedImageInput, image: RawImage): Promise<Embedded> {
  const { registry, keyring } = deps;
  const { tenantId, watermarkId, assetId } = input;
  const fresh = planOf(keyring, watermarkId, null);
  // Content-adaptive: flat content starts at the flattest level (domain/image/readback.ts), chosen by the worker from
  // the luma grid it embeds on; a cairn-sync-v2 choice only (the v1 marks have no levels).
  const startAt = (plan: MarkPlan) => (plan.algorithm === CAIRN_SYNC_V2_NAME ? 'content' : 0);
  const embedding = embedPlan(deps, image, fresh, startAt(fresh));
  embedding.catch(() => undefined); // read below, unless the registry refused the id first
  const { plan } = await inSpan('watermark.registry.record', () =>
    registry.recordFor(tenantId, watermarkId, (existing) => {
      const plan = planOf(keyring, watermarkId, existing);
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
  const asPlanned = plan.hex === fresh.hex && plan.algorithm === fresh.algorithm && plan.key?.kid === fresh.key?.kid;
  const outcome = asPlanned
    ? await embedding
    : await embedPlan(deps, await freshPixels(deps, input), plan, startAt(plan));
  return { plan, outcome, level: outcome.level ?? 0 };
}

/**
 * The marked file at the first strength level whose mark reads back, from the level `embedded` is at; undefined
 * when none does. Only cairn-sync-v2 has stronger settings to escalate to; a retried v1 id is written as it was,
 * once.
 */
async function firstThatReadsBack(
  deps: WatermarkDeps,
  input: EmbedImageInput,
  mediaType: DecodedForEmbedding['mediaType'],
  embedded: Embedded,
): Promise<EmbeddedImage | undefined> {
  const { plan, level: from } = embedded;
  const levels = plan.algorithm === CAIRN_SYNC_V2_NAME ? READBACK_LEVELS : 1;
  let outcome = embedded.outcome;
  for (let level = from; ;) {
    const { encoded, thumbnail } = await encodeAndDescribe(deps, input, mediaType, outcome, level === from);
    // Read back before answering: the file the signer will sign, decoded and searched as a verify of it would be
    // (the same decode, the same detector, under the mark's own key). A mark that does not read is never answered.
    if (await readsBack(deps, encoded, plan, input.watermarkId)) {
      return {
        encoded,
        thumbnail,
        width: outcome.image.width,
        height: outcome.image.height,
        payloadHex: plan.hex,
        psnrDb: outcome.psnrDb,
        algorithm: outcome.algorithm,
        keyId: outcome.keyId ?? '',
        strengthLevel: level,
        notEmbeddedReason: '',
      };
    }
    level++;
    if (level >= levels) return undefined;
    deps.logger.info({ watermark_id: input.watermarkId, level }, 'image mark did not read back; embedding it stronger');
    outcome = await embedPlan(deps, await freshPixels(deps, input), plan, level);
  }
}

/**
 * The marked pixels encoded as the upload was, with their thumbnail. One encode per try, here: the marked pixels
 * never cross the wire, only the file the signer signs. On the first try the description is kept meanwhile (a
 * database round trip while sharp encodes on its own threads); it is the content the mark was put on, the same at
 * every level, and the first description stays.
 */
async function encodeAndDescribe(
  deps: WatermarkDeps,
  input: EmbedImageInput,
  mediaType: DecodedForEmbedding['mediaType'],
  outcome: EmbedOutcome,
  firstTry: boolean,
): Promise<{ encoded: Uint8Array; thumbnail: Uint8Array }> {
  const content = outcome.content;
  const [{ encoded, thumbnail }] = await Promise.all([
    inSpan('watermark.encode', () => deps.codecs.encodeMarked(outcome.image, mediaType)),
    content && firstTry
      ? inSpan('watermark.registry.describe', () => deps.registry.describe(input.tenantId, input.watermarkId, content))
      : Promise.resolve(),
  ]);
  checkAnswerSize('image', encoded.length);
  return { encoded, thumbnail };
}

/**
 * No setting reads: the sign goes on without the mark (the signer encodes the upload itself). The registry row
 * stays: it names an asset no file carries, so no detection ever resolves to it.
 */
async function notEmbedded(deps: WatermarkDeps, input: EmbedImageInput, image: RawImage): Promise<EmbeddedImage> {
  const reason = unreadableReason(await freshPixels(deps, input));
  deps.logger.warn(
    { watermark_id: input.watermarkId, asset_id: input.assetId, reason },
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
  plan: MarkPlan,
  watermarkId: string,
): Promise<boolean> {
  const image = await inSpan('watermark.readback.decode', () =>
    deps.codecs.decodeForDetection(encoded, deps.mediaLimits),
  );
  // Taken before the search (the pixels are handed over to the worker): from the file's bytes for JPEG and PNG,
  // which the signed copy shares less its manifest store, else from the pixels.
  const memoKey = DetectionMemo.unsignedKeyOf(encoded) ?? DetectionMemo.pixelKeyOf(image);
  // A cairn-sync-v2 mark is looked for alone (the v1 marks, tried first by a verify's search, never read one).
  const { key } = plan;
  const outcome = await inSpan('watermark.readback', () =>
    inWorker(deps.logger, 'readback', () =>
      key && plan.algorithm === CAIRN_SYNC_V2_NAME
        ? deps.pool.readBack(image, key)
        : deps.pool.detect(image, key ? [key] : []),
    ),
  );
  const reads =
    outcome.detection !== null &&
    outcome.algorithm === plan.algorithm &&
    payloadHex(outcome.detection.payload) === plan.hex;
  // This reading is the stored verdict's: the signed file has these pixels, and a search under every key finds the
  // same mark first when it is the current key's (the v1 marks tried before it never read a v2 mark). Kept only then.
  if (reads && plan.key?.kid === deps.keyring.current?.kid)
    deps.detections.set(memoKey, { applicable: true, outcome, embeddedAs: watermarkId });
  return reads;
}
