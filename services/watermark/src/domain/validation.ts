import { CairnError } from '@cairn/errors';
import { isId, type IdKind } from '@cairn/ids';
import { isChannels, type RawImage } from './image/raw-image.js';

/** Largest width or height accepted (the gRPC message limit bounds the pixel buffer well before this). */
export const MAX_IMAGE_SIDE = 8192;

/** The PixelImage fields as they arrive (proto3: every field present, zero when unset). */
export interface PixelImageInput {
  readonly pixels: Uint8Array;
  readonly width: number;
  readonly height: number;
  readonly channels: number;
}

function invalid(detail: string, path: string): CairnError {
  return new CairnError('cairn.validation.invalid_body', detail, { errors: [{ path, message: detail }] });
}

export function requireId(kind: IdKind, value: string, field: string): string {
  const article = /^[aeiou]/.test(kind) ? 'an' : 'a';
  if (!isId(kind, value)) throw invalid(`${field} must be ${article} ${kind} id, got ${JSON.stringify(value.slice(0, 64))}`, field);
  return value;
}

/** The request's image as a RawImage, or cairn.validation.invalid_body saying what is wrong with it. */
export function requireImage(image: PixelImageInput | undefined, minSide = 1): RawImage {
  if (!image) throw invalid('image is required', 'image');
  const { pixels, width, height, channels } = image;
  if (!isChannels(channels)) throw invalid(`image.channels must be 1 (gray), 3 (RGB) or 4 (RGBA), got ${channels}`, 'image.channels');
  for (const [field, value] of [['width', width], ['height', height]] as const) {
    if (!Number.isInteger(value) || value < 1 || value > MAX_IMAGE_SIDE) {
      throw invalid(`image.${field} must be between 1 and ${MAX_IMAGE_SIDE}, got ${value}`, `image.${field}`);
    }
  }
  const expected = width * height * channels;
  if (pixels.length !== expected) {
    throw invalid(`image.pixels holds ${pixels.length} bytes; ${width}×${height}×${channels} needs ${expected}`, 'image.pixels');
  }
  if (width < minSide || height < minSide) {
    throw invalid(`image is ${width}×${height}; a watermark needs at least ${minSide}×${minSide} pixels`, 'image');
  }
  return { pixels, width, height, channels };
}
