import { CairnError } from '@cairn/errors';
import {
  decodeImage,
  decodeRgb,
  encodeImage,
  makeThumbnail,
  type EncodableImageType,
  type MediaLimits,
} from '@cairn/media';
import { isChannels, type RawImage } from '../domain/image/raw-image.js';
import type { DecodedForEmbedding } from '../domain/media-formats.js';
import { admitEncoded, invalidEncoded } from './encoded-file.js';

/**
 * The service's own decode of the files callers send (they send encoded bytes, never pixels): header first
 * (cairn.media.too_large before anything is allocated), then sharp under the same pixel limit.
 */

const EMBEDDABLE: ReadonlySet<string> = new Set(['image/jpeg', 'image/png', 'image/webp']);

/** The upload to mark, decoded once the way it will be re-encoded (its own format, alpha kept where it has one). */
export async function decodeForEmbedding(encoded: Uint8Array, limits: MediaLimits): Promise<DecodedForEmbedding> {
  const { bytes, sniffed, probe } = await admitEncoded(
    encoded,
    limits,
    (type) => EMBEDDABLE.has(type.mediaType),
    (type) => `encoded must be a JPEG, PNG or WebP image${type ? `, got ${type.mediaType}` : ''}`,
  );
  if (!probe) throw invalidEncoded(`encoded looks like ${sniffed.mediaType} but its header cannot be read`);
  const mediaType = sniffed.mediaType as EncodableImageType;
  // Embedding serves a sign: an upload that only looks like an image is the sign's unsupported_mime, as it was
  // when the signer decoded it itself.
  const decoded = await decodeImage(bytes, mediaType, limits.imagePixels).catch(() => {
    throw new CairnError('cairn.sign.unsupported_mime', `The file looks like ${mediaType} but cannot be decoded.`);
  });
  return { image: decoded, mediaType };
}

/** The marked pixels as the file the signer signs, and the manifest's thumbnail, from one set of pixels. */
export async function encodeMarked(
  image: RawImage,
  mediaType: EncodableImageType,
): Promise<{ encoded: Buffer; thumbnail: Buffer }> {
  if (image.channels !== 3 && image.channels !== 4) throw new Error(`marked image has ${image.channels} channels`);
  const pixels = {
    pixels: Buffer.from(image.pixels.buffer, image.pixels.byteOffset, image.pixels.byteLength),
    width: image.width,
    height: image.height,
    channels: image.channels,
  };
  const [encoded, thumbnail] = await Promise.all([encodeImage(pixels, mediaType), makeThumbnail(pixels)]);
  return { encoded, thumbnail };
}

/**
 * The fewest pixels an image is shrunk to before a detection searches it (`workingSize`). Every image mark is read
 * on grids of a fixed number of samples whatever the image's size (cairn-sync-v2 about 320² and, retrying, 512²;
 * the v1 marks 256²): past a few megapixels, more pixels only add decode and resampling time, linear in the
 * picture's size up to the media limit (a 12 MP photo took 5× a 1 MP one). At 2 MP a sample of the finer grid still
 * spans about three pixels; a 12 or 24 MP copy read at half size gave the same payload, confidence and content
 * correlation as at full size (docs/performance.md, "Verify").
 */
export const DETECTION_WORKING_PIXELS = 2_000_000;

/**
 * The power of two an image of `width` × `height` is shrunk by so that it keeps at least DETECTION_WORKING_PIXELS
 * (1 for anything below twice that): powers of two, because a JPEG decodes at those scales directly.
 */
export function detectionShrink(width: number, height: number): number {
  let shrink = 1;
  while ((width * height) / (4 * shrink * shrink) >= DETECTION_WORKING_PIXELS) shrink *= 2;
  return shrink;
}

/**
 * Any image sharp reads, as the RGB a viewer sees; a file that is no image is the caller's error. `workingSize`:
 * a large image comes out shrunk (detectionShrink), which bounds a detection's cost by the grids it reads.
 */
export async function decodeForDetection(
  encoded: Uint8Array,
  limits: MediaLimits,
  { workingSize = false }: { workingSize?: boolean } = {},
): Promise<RawImage> {
  const { bytes, sniffed, probe } = await admitEncoded(
    encoded,
    limits,
    (type) => type.modality === 'image',
    () => 'encoded must be an image file',
  );
  const shrink = workingSize && probe?.width && probe.height ? detectionShrink(probe.width, probe.height) : 1;
  const longestSide =
    probe?.width && probe.height && shrink > 1 ? Math.round(Math.max(probe.width, probe.height) / shrink) : undefined;
  const decoded = await decodeRgb(bytes, limits.imagePixels, longestSide === undefined ? {} : { longestSide });
  if (!decoded || !isChannels(decoded.channels))
    throw invalidEncoded(`encoded looks like ${sniffed.mediaType} but cannot be decoded`);
  return { pixels: decoded.pixels, width: decoded.width, height: decoded.height, channels: decoded.channels };
}
