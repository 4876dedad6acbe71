import { CairnError } from '@cairn/errors';
import {
  checkMediaLimits,
  decodeImage,
  decodeRgb,
  encodeImage,
  makeThumbnail,
  sniffMediaType,
  SNIFF_BYTES,
  type EncodableImageType,
  type MediaLimits,
} from '@cairn/media';
import { isChannels, type RawImage } from '../domain/image/raw-image.js';

/**
 * The service's own decode of the files callers send (they send encoded bytes, never pixels): header first
 * (cairn.media.too_large before anything is allocated), then sharp under the same pixel limit.
 */

const EMBEDDABLE: ReadonlySet<string> = new Set(['image/jpeg', 'image/png', 'image/webp']);

function invalid(detail: string): CairnError {
  return new CairnError('cairn.validation.invalid_body', detail, { errors: [{ path: 'encoded', message: detail }] });
}

export interface DecodedForEmbedding {
  readonly image: RawImage;
  readonly mediaType: EncodableImageType;
}

/** The upload to mark, decoded once the way it will be re-encoded (its own format, alpha kept where it has one). */
export async function decodeForEmbedding(encoded: Uint8Array, limits: MediaLimits): Promise<DecodedForEmbedding> {
  const bytes = Buffer.from(encoded.buffer, encoded.byteOffset, encoded.byteLength);
  const sniffed = sniffMediaType(bytes.subarray(0, SNIFF_BYTES));
  if (!sniffed || !EMBEDDABLE.has(sniffed.mediaType))
    throw invalid(`encoded must be a JPEG, PNG or WebP image${sniffed ? `, got ${sniffed.mediaType}` : ''}`);
  const probe = await checkMediaLimits(bytes, sniffed, limits);
  if (!probe) throw invalid(`encoded looks like ${sniffed.mediaType} but its header cannot be read`);
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

/** Any image sharp reads, as the RGB a viewer sees; a file that is no image is the caller's error. */
export async function decodeForDetection(encoded: Uint8Array, limits: MediaLimits): Promise<RawImage> {
  const bytes = Buffer.from(encoded.buffer, encoded.byteOffset, encoded.byteLength);
  const sniffed = sniffMediaType(bytes.subarray(0, SNIFF_BYTES));
  if (!sniffed || sniffed.modality !== 'image') throw invalid('encoded must be an image file');
  await checkMediaLimits(bytes, sniffed, limits);
  const decoded = await decodeRgb(bytes, limits.imagePixels);
  if (!decoded || !isChannels(decoded.channels))
    throw invalid(`encoded looks like ${sniffed.mediaType} but cannot be decoded`);
  return { pixels: decoded.pixels, width: decoded.width, height: decoded.height, channels: decoded.channels };
}
