import { CAIRN_DCT_V1_NAME } from '../domain/image/cairn-dct-v1.js';
import type { MarkRecords } from './ports.js';

/** The registered mark carrying a payload, public fields only: whose mark it is stays with the registry. */
export async function resolvePayload(registry: MarkRecords, payloadHex: string) {
  const mark = await registry.findByPayload(payloadHex);
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
}
