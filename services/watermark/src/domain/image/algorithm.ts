import type { RawImage } from './raw-image.js';

export interface Detection {
  /** The payload whose check passed. */
  readonly payload: Uint8Array;
  /** 0..1: how clearly the payload was read (mean agreement of the votes with the decoded codeword). */
  readonly confidence: number;
}

/**
 * An invisible image watermark carrying a fixed-size payload. Implementations are pure CPU work (they run in
 * the worker pool) and versioned by `name`: a change that alters the marks they write or read is a new name,
 * because marks already in the world must stay readable by the version that wrote them.
 */
export interface ImageWatermarkAlgorithm {
  readonly name: string;
  /** Bytes of payload the mark carries. */
  readonly payloadBytes: number;
  /** Smallest width and height `embed` accepts. */
  readonly minEmbedSize: number;
  /** Returns the marked image (may reuse the input's buffer: the caller hands it over). */
  embed(image: RawImage, payload: Uint8Array): RawImage;
  /** The payload if a mark is present and its check passes; null otherwise. */
  detect(image: RawImage): Detection | null;
}
