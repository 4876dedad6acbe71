import { createHmac } from 'node:crypto';
import { WATERMARK_ALG } from '@cairn/catalog';
import { CAIRN_DCT_V1 } from './cairn-dct-v1.js';
import { DctQimWatermark, type DctQimParameters } from './dct-qim.js';

export const CAIRN_DCT_KEYED_V1_NAME = WATERMARK_ALG.dctKeyedV1;

/** Bytes of a watermark key (HMAC-SHA256 and AES-256 both take 32). */
export const WATERMARK_KEY_BYTES = 32;

/** HMAC-SHA256(key, "cairn-dct-keyed-v1|" + purpose): one independent secret per use of the key. */
export function deriveSecret(key: Uint8Array, purpose: 'layout' | 'dither' | 'payload', message = ''): Buffer {
  if (key.length !== WATERMARK_KEY_BYTES) throw new Error(`a watermark key is ${WATERMARK_KEY_BYTES} bytes`);
  return createHmac('sha256', key).update(`${CAIRN_DCT_KEYED_V1_NAME}|${purpose}|${message}`, 'utf8').digest();
}

/**
 * The parameters of "cairn-dct-keyed-v1": cairn-dct-v1's grid, frequencies, step, code and thresholds (so
 * the same invisibility and robustness), with the slot permutation and the dithers drawn from secrets
 * derived from the key. Without the key, the published code cannot place a mark where this detector reads
 * it, nor read one (QIM with an unknown dither looks like noise). Frozen like v1: a change is a new name.
 */
export function cairnDctKeyedV1(key: Uint8Array): DctQimParameters {
  return { ...CAIRN_DCT_V1, seed: { layout: deriveSecret(key, 'layout'), dither: deriveSecret(key, 'dither') } };
}

export function createKeyedImageWatermark(key: Uint8Array): DctQimWatermark {
  return new DctQimWatermark(CAIRN_DCT_KEYED_V1_NAME, cairnDctKeyedV1(key));
}
