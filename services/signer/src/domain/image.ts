// The image codec lives in @cairn/media: the watermark service decodes, marks and re-encodes with the same
// settings (docs/decisions/0023-media-limits-from-headers.md), and the signer uses it for recipes without a watermark.
export {
  decodeImage,
  encodeImage,
  makeThumbnail,
  type DecodedImage,
  type EncodableImageType as ImageMediaType,
} from '@cairn/media';

/** Watermarking needs room for its grid; smaller images are refused with a clear message. */
export const MIN_IMAGE_SIDE = 256;
