import type { Modality } from '@cairn/media';
import { AUDIO_ALG } from './audio.js';
import { HASH_BYTES, PDQ_ALG } from './pdq.js';
import { SIGNATURE_HEX_DIGITS, TEXT_ALG } from './text.js';
import { VIDEO_ALG } from './video.js';

/** A fingerprint algorithm Lookup accepts, by content (files of `mediaTypes`) and, when it has one, by value. */
export interface FingerprintAlgorithm {
  readonly alg: string;
  readonly modality: Modality;
  readonly mediaTypes: readonly string[];
  /** Hex digits of a binding value; 0: not looked up by value. */
  readonly valueHexDigits: number;
}

export const IMAGE_ALGORITHM: FingerprintAlgorithm = {
  alg: PDQ_ALG,
  modality: 'image',
  mediaTypes: ['image/jpeg', 'image/png', 'image/webp'],
  valueHexDigits: HASH_BYTES * 2,
};

/** Landmarks are many per clip, aligned in time: looked up by content only. */
export const AUDIO_ALGORITHM: FingerprintAlgorithm = {
  alg: AUDIO_ALG,
  modality: 'audio',
  mediaTypes: ['audio/wav', 'audio/mpeg', 'audio/flac', 'audio/ogg', 'audio/mp4'],
  valueHexDigits: 0,
};

/** PDQ hashes of frames at scene changes; by value, one frame's hash finds the videos holding that frame. */
export const VIDEO_ALGORITHM: FingerprintAlgorithm = {
  alg: VIDEO_ALG,
  modality: 'video',
  mediaTypes: ['video/mp4', 'video/webm', 'video/quicktime', 'video/x-matroska'],
  valueHexDigits: HASH_BYTES * 2,
};

export const TEXT_ALGORITHM: FingerprintAlgorithm = {
  alg: TEXT_ALG,
  modality: 'text',
  mediaTypes: ['text/plain'],
  valueHexDigits: SIGNATURE_HEX_DIGITS,
};

/** Every algorithm this service computes and indexes, one per modality. */
export const ALGORITHMS: readonly FingerprintAlgorithm[] = [
  IMAGE_ALGORITHM,
  AUDIO_ALGORITHM,
  VIDEO_ALGORITHM,
  TEXT_ALGORITHM,
];

export function algorithmNamed(alg: string): FingerprintAlgorithm | undefined {
  return ALGORITHMS.find((a) => a.alg === alg);
}
