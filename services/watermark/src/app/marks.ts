import { CairnError } from '@cairn/errors';
import { CAIRN_DCT_KEYED_V1_NAME } from '../domain/image/cairn-dct-keyed-v1.js';
import { CAIRN_DCT_V1_NAME } from '../domain/image/cairn-dct-v1.js';
import { CAIRN_SYNC_V2_NAME } from '../domain/image/cairn-sync-v2.js';
import type { Keyring, WatermarkKey } from '../domain/keys.js';
import { payloadHex } from '../domain/payload.js';
import type { KeyedAlgorithmName } from '../domain/worker-protocol.js';
import type { MarkRecord } from './ports.js';
import type { WatermarkDeps } from './deps.js';
import type { DetectedMark } from './detection-memo.js';

export type { DetectedMark } from './detection-memo.js';

/**
 * A detected mark and the registry entry it resolves to. An entry counts only for a mark read the way it was
 * written: a keyed mark's payload is public (manifests carry it), so the keyless code stamping it, or a key that
 * is not the mark's, is not that mark. The one exception is a video's: its frames (cairn-sync-v2) and its audio
 * track (cairn-audio-wm-v3, or v1 before it) carry the same payload under the same key, and the row records the frames' algorithm.
 */
export async function registeredMark(
  { registry, logger }: Pick<WatermarkDeps, 'registry' | 'logger'>,
  detection: { payload: Uint8Array; confidence: number },
  name: string,
  keyId: string | null,
  /** The algorithms a registry row may name for this read (a video's audio track carries its frame mark's payload). */
  recordedAs: ReadonlyArray<string> = [name],
): Promise<{ answer: DetectedMark; mark: MarkRecord | null }> {
  const hex = payloadHex(detection.payload);
  const found = await registry.findByPayload(hex);
  const mark = found && recordedAs.includes(found.algorithm) && found.keyId === keyId ? found : null;
  if (found && !mark)
    logger.warn(
      { algorithm: name, key_id: keyId, registered_algorithm: found.algorithm, registered_key_id: found.keyId },
      'a registered payload was read by another algorithm or key than it was embedded with; not reported as that mark',
    );
  const answer: DetectedMark = {
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
}

/** The key an already recorded mark was written with: none for cairn-dct-v1, else one the service still holds. */
export function keyOf(
  keyring: Keyring,
  mark: { readonly watermarkId: string; readonly algorithm: string; readonly keyId: string | null },
): WatermarkKey | undefined {
  if (mark.algorithm === CAIRN_DCT_V1_NAME) return undefined;
  const key = keyring.all.find((k) => k.kid === mark.keyId);
  if (!key)
    throw new CairnError(
      'cairn.sign.idempotency_conflict',
      `watermark_id ${mark.watermarkId} was embedded under a watermark key this service no longer holds; use a new watermark id`,
    );
  return key;
}

export function isKeyedImageAlgorithm(name: string): name is KeyedAlgorithmName {
  return name === CAIRN_SYNC_V2_NAME || name === CAIRN_DCT_KEYED_V1_NAME;
}
