import type { Modality } from '@cairn/media';
import { HASH_BYTES, PDQ_ALG } from './pdq.js';

/** A fingerprint algorithm Lookup accepts, by content (files of `mediaTypes`) and, when it has one, by value. */
export interface FingerprintAlgorithm {
  readonly alg: string;
  readonly modality: Modality;
  readonly mediaTypes: readonly string[];
  /** Hex digits of a binding value; 0: not looked up by value. */
  readonly valueHexDigits: number;
}

export const IMAGE_ALGORITHM: FingerprintAlgorithm = { alg: PDQ_ALG, modality: 'image', mediaTypes: ['image/jpeg', 'image/png', 'image/webp'], valueHexDigits: HASH_BYTES * 2 };

/** Every algorithm this service computes and indexes, one per modality. */
export const ALGORITHMS: readonly FingerprintAlgorithm[] = [IMAGE_ALGORITHM];

export function algorithmNamed(alg: string): FingerprintAlgorithm | undefined {
  return ALGORITHMS.find((a) => a.alg === alg);
}
