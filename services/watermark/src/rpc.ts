import type { GenService } from '@bufbuild/protobuf/codegenv2';
import { CairnError } from '@cairn/errors';
import type { Logger } from '@cairn/logging';
import type { watermarkV1 } from '@cairn/proto';
import type { ServiceImpl } from '@cairn/rpc';
import type { MarkRegistry } from './db/marks.js';
import type { ImageWatermarkAlgorithm } from './domain/image/algorithm.js';
import { ImageRejectedError } from './domain/image/raw-image.js';
import { PAYLOAD_BYTES, payloadFor, payloadHex } from './domain/payload.js';
import { PoolClosedError, type ImageWorkerPool } from './domain/pool.js';
import { requireId, requireImage } from './domain/validation.js';

type Methods = typeof watermarkV1.WatermarkService extends GenService<infer M> ? M : never;

export interface WatermarkDeps {
  readonly pool: ImageWorkerPool;
  readonly registry: MarkRegistry;
  /** The algorithm the workers run; the main thread only reads its name and limits. */
  readonly algorithm: Pick<ImageWatermarkAlgorithm, 'name' | 'minEmbedSize'>;
  readonly logger: Logger;
}

/** cairn.watermark.v1.WatermarkService: embed a registered mark in pixels; detect one and resolve it. */
export function watermarkHandlers({ pool, registry, algorithm, logger }: WatermarkDeps): ServiceImpl<Methods> {
  /** Worker failures as the caller should see them: its own bad image, a drain, or an internal error. */
  const inWorker = async <T>(what: string, work: () => Promise<T>): Promise<T> => {
    try {
      return await work();
    } catch (error) {
      if (error instanceof ImageRejectedError) throw new CairnError('cairn.validation.invalid_body', error.message);
      if (error instanceof PoolClosedError) throw new CairnError('cairn.unavailable', 'The watermark service is shutting down; retry.');
      logger.error({ err: error }, `${what} failed`);
      throw new CairnError('cairn.internal_error', `${what} failed`, {}, { cause: error });
    }
  };

  return {
    embedImage: async (request) => {
      const tenantId = requireId('tenant', request.tenantId, 'tenant_id');
      const watermarkId = requireId('watermark', request.watermarkId, 'watermark_id');
      const assetId = requireId('asset', request.assetId, 'asset_id');
      const image = requireImage(request.image, algorithm.minEmbedSize);
      const payload = payloadFor(watermarkId);
      const hex = payloadHex(payload);
      // Recorded before the (expensive) embedding, so a refused id costs no CPU; a mark recorded and then
      // not delivered is harmless: the caller retries with the same id and gets the same payload.
      await registry.record({ watermarkId, payloadHex: hex, tenantId, assetId, algorithm: algorithm.name });
      const outcome = await inWorker('embedding', () => pool.embed(image, payload));
      return { image: outcome.image, payloadHex: hex, psnrDb: outcome.psnrDb, algorithm: outcome.algorithm };
    },

    detectImage: async (request) => {
      const image = requireImage(request.image);
      const { detection, algorithm: name } = await inWorker('detection', () => pool.detect(image));
      if (!detection) return { detected: false, algorithm: name };
      const hex = payloadHex(detection.payload);
      const mark = await registry.findByPayload(hex);
      return {
        detected: true,
        payloadHex: hex,
        confidence: detection.confidence,
        registered: mark !== null,
        watermarkId: mark?.watermarkId ?? '',
        assetId: mark?.assetId ?? '',
        tenantId: mark?.tenantId ?? '',
        algorithm: mark?.algorithm ?? name,
      };
    },

    resolvePayload: async (request) => {
      const hex = request.payloadHex.toLowerCase();
      if (!PAYLOAD_HEX.test(hex)) throw new CairnError('cairn.validation.invalid_body', `payload_hex must be ${PAYLOAD_BYTES * 2} hex digits`);
      const mark = await registry.findByPayload(hex);
      // Public fields only: whose mark it is stays with the registry.
      return mark ? { registered: true, watermarkId: mark.watermarkId, assetId: mark.assetId, algorithm: mark.algorithm } : { registered: false };
    },
  };
}

const PAYLOAD_HEX = new RegExp(`^[0-9a-f]{${PAYLOAD_BYTES * 2}}$`);
