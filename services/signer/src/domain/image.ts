import sharp from 'sharp';

export interface DecodedImage {
  pixels: Buffer;
  width: number;
  height: number;
  channels: 3 | 4;
}

export type ImageMediaType = 'image/jpeg' | 'image/png' | 'image/webp';

/** Watermarking needs room for its grid; smaller images are refused with a clear message. */
export const MIN_IMAGE_SIDE = 256;
export const MAX_IMAGE_PIXELS = 100_000_000;

/**
 * Decodes once to raw pixels (EXIF orientation applied, so what is marked is what viewers display). Alpha is
 * kept for formats that carry it.
 */
export async function decodeImage(bytes: Buffer, mediaType: ImageMediaType): Promise<DecodedImage> {
  let pipeline = sharp(bytes, { limitInputPixels: MAX_IMAGE_PIXELS, failOn: 'error' }).rotate();
  pipeline = mediaType === 'image/jpeg' ? pipeline.removeAlpha().toColourspace('srgb') : pipeline.toColourspace('srgb');
  const { data, info } = await pipeline.raw().toBuffer({ resolveWithObject: true });
  if (info.channels !== 3 && info.channels !== 4) throw new Error(`unexpected channel count ${info.channels}`);
  return { pixels: data, width: info.width, height: info.height, channels: info.channels };
}

/** Encodes pixels back to the upload's format at a quality that keeps the watermark and the look. */
export async function encodeImage(image: DecodedImage, mediaType: ImageMediaType): Promise<Buffer> {
  const raw = sharp(image.pixels, { raw: { width: image.width, height: image.height, channels: image.channels } });
  if (mediaType === 'image/jpeg') return raw.jpeg({ quality: 92, chromaSubsampling: '4:4:4', mozjpeg: false }).toBuffer();
  if (mediaType === 'image/png') return raw.png({ compressionLevel: 6 }).toBuffer();
  return raw.webp({ quality: 92, alphaQuality: 100 }).toBuffer();
}

/** The manifest's thumbnail, made from pixels already decoded (c2pa-rs's own costs ~10× the signature). */
export async function makeThumbnail(image: DecodedImage, maxSide = 256): Promise<Buffer> {
  return sharp(image.pixels, { raw: { width: image.width, height: image.height, channels: image.channels } })
    .resize(maxSide, maxSide, { fit: 'inside', withoutEnlargement: true })
    .flatten({ background: '#ffffff' })
    .jpeg({ quality: 80 })
    .toBuffer();
}
