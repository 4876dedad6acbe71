// Algorithm ids: the names Cairn writes into manifests' soft-binding assertions, the watermark registry and the
// fingerprint index, and that the API and the C2PA Soft Binding Resolution API (/c2pa/v1) take and answer. Stored
// and published, so never renamed: a new version is a new id. Defined once here; the services import them.

/** The watermark algorithms by name. */
export const WATERMARK_ALG = {
  /** Keyed tiled spread-spectrum image mark that survives crops and rotations; what new image signs write. */
  syncV2: 'cairn-sync-v2',
  /** Keyed DCT/QIM image mark (the image mark before cairn-sync-v2). */
  dctKeyedV1: 'cairn-dct-keyed-v1',
  /** Keyless DCT/QIM image mark: its layout is public, so anyone with the code can stamp it. */
  dctV1: 'cairn-dct-v1',
  /**
   * Keyed audio mark, v2's retuning with a water-level budget and a larger step; what new audio marks and a video's
   * audio track carry.
   */
  audioV3: 'cairn-audio-wm-v3',
  /** Keyed audio mark, v1's construction retuned for codecs, noise and speed changes; measured, never written. */
  audioV2: 'cairn-audio-wm-v2',
  /** Keyed QIM audio mark; what audio marks carried before v3 (still read, and written again for an id recorded with it). */
  audioV1: 'cairn-audio-wm-v1',
} as const;
export type WatermarkAlg = (typeof WATERMARK_ALG)[keyof typeof WATERMARK_ALG];

/** The image watermarks, newest first: new signs write the first, the others are still read and resolved. */
export const IMAGE_WATERMARK_ALGS = [WATERMARK_ALG.syncV2, WATERMARK_ALG.dctKeyedV1, WATERMARK_ALG.dctV1] as const;
export type ImageWatermarkAlg = (typeof IMAGE_WATERMARK_ALGS)[number];
/** The image watermarks written under a key. */
export type KeyedImageWatermarkAlg = typeof WATERMARK_ALG.syncV2 | typeof WATERMARK_ALG.dctKeyedV1;

export function isImageWatermarkAlg(alg: string | undefined): alg is ImageWatermarkAlg {
  return (IMAGE_WATERMARK_ALGS as ReadonlyArray<string | undefined>).includes(alg);
}

/** The perceptual fingerprints of the soft-binding service, one per modality. */
export const FINGERPRINT_ALG = {
  /** PDQ-class 256-bit image hash. */
  image: 'cairn.pdq.v1',
  /** PDQ-class hashes of video frames sampled at scene changes. */
  video: 'cairn.pdq-frames.v1',
  /** Spectral-peak landmarks of audio. */
  audio: 'cairn.audio-peaks.v1',
  /** MinHash signature of a text's shingles. */
  text: 'cairn.minhash.v1',
} as const;
export type FingerprintAlg = (typeof FINGERPRINT_ALG)[keyof typeof FINGERPRINT_ALG];
