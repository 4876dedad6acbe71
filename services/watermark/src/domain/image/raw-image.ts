/** Samples per pixel the service accepts: gray, RGB, RGBA. */
export type Channels = 1 | 3 | 4;

/** Interleaved 8-bit samples, row-major (the wire format of cairn.watermark.v1.PixelImage). */
export interface RawImage {
  readonly pixels: Uint8Array;
  readonly width: number;
  readonly height: number;
  readonly channels: Channels;
}

export function isChannels(value: number): value is Channels {
  return value === 1 || value === 3 || value === 4;
}

/** Why an image cannot be processed; the service answers these as validation failures, not internal errors. */
export class ImageRejectedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ImageRejectedError';
  }
}

/** Throws unless the buffer holds exactly width × height × channels samples. */
export function assertWellFormed(image: RawImage): void {
  const { width, height, channels, pixels } = image;
  if (!Number.isInteger(width) || !Number.isInteger(height) || width <= 0 || height <= 0) {
    throw new ImageRejectedError(`image dimensions must be positive integers, got ${width}×${height}`);
  }
  if (!isChannels(channels)) throw new ImageRejectedError(`channels must be 1, 3 or 4, got ${String(channels)}`);
  const expected = width * height * channels;
  if (pixels.length !== expected) {
    throw new ImageRejectedError(
      `pixel buffer holds ${pixels.length} bytes; ${width}×${height}×${channels} needs ${expected}`,
    );
  }
}
