import sharp from 'sharp';

export interface RgbPixels {
  /** Row-major, `channels` bytes per pixel. */
  pixels: Buffer;
  width: number;
  height: number;
  channels: number;
}

/**
 * An image decoded the way a viewer shows it (EXIF orientation applied, sRGB, alpha dropped): the pixels a
 * watermark detector reads. Null when the bytes are not an image sharp decodes within `maxPixels`. With
 * `longestSide`, a larger image comes out shrunk to that longest side, its aspect kept (a JPEG is decoded at a
 * reduced scale directly, so the full-size pixels are never made).
 */
export async function decodeRgb(
  bytes: Buffer,
  maxPixels: number,
  { longestSide }: { longestSide?: number } = {},
): Promise<RgbPixels | null> {
  try {
    const decoder = sharp(bytes, { failOn: 'error', limitInputPixels: maxPixels, sequentialRead: true }).rotate();
    // A square box: the longest side is the same whichever way the EXIF orientation turns the picture.
    if (longestSide !== undefined)
      decoder.resize({ width: longestSide, height: longestSide, fit: 'inside', withoutEnlargement: true });
    const { data, info } = await decoder
      .removeAlpha()
      .toColourspace('srgb')
      .raw()
      .toBuffer({ resolveWithObject: true });
    return { pixels: data, width: info.width, height: info.height, channels: info.channels };
  } catch {
    return null;
  }
}

/** The still-image formats Cairn re-encodes after watermarking (the signer's image recipes). */
export type EncodableImageType = 'image/jpeg' | 'image/png' | 'image/webp';

export interface DecodedImage {
  pixels: Buffer;
  width: number;
  height: number;
  channels: 3 | 4;
}

/**
 * Decodes once to raw pixels for marking (EXIF orientation applied, so what is marked is what viewers display);
 * alpha kept for formats that carry it. `maxPixels` is sharp's own guard behind the header check
 * (checkMediaLimits), and sequential reading lets libvips stream the rows instead of holding the file twice.
 */
export async function decodeImage(
  bytes: Buffer,
  mediaType: EncodableImageType,
  maxPixels: number,
): Promise<DecodedImage> {
  let pipeline = sharp(bytes, { limitInputPixels: maxPixels, failOn: 'error', sequentialRead: true }).rotate();
  pipeline = mediaType === 'image/jpeg' ? pipeline.removeAlpha().toColourspace('srgb') : pipeline.toColourspace('srgb');
  const { data, info } = await pipeline.raw().toBuffer({ resolveWithObject: true });
  if (info.channels !== 3 && info.channels !== 4) throw new Error(`unexpected channel count ${info.channels}`);
  return { pixels: data, width: info.width, height: info.height, channels: info.channels };
}

/**
 * Encodes pixels back to the upload's format at a quality that keeps the watermark and the look. JPEG is plain
 * libjpeg-turbo with its standard Huffman tables: the optimised tables (sharp's default) take a second pass that
 * made the encode of a 1 MP photo ~3× slower (15–18 → 5–7 ms) to save 1.5% of the file, and change no pixel.
 */
export async function encodeImage(image: DecodedImage, mediaType: EncodableImageType): Promise<Buffer> {
  const raw = sharp(image.pixels, { raw: { width: image.width, height: image.height, channels: image.channels } });
  if (mediaType === 'image/jpeg')
    return raw.jpeg({ quality: 92, chromaSubsampling: '4:4:4', mozjpeg: false, optimiseCoding: false }).toBuffer();
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

/**
 * A display thumbnail straight from an image file (the public page's): decoded under `maxPixels` (the caller has
 * checked the header first), shrunk while loading where the format allows, EXIF orientation applied, white behind
 * transparency, JPEG. Null when sharp cannot decode the file.
 */
export async function thumbnailOfFile(bytes: Buffer, maxPixels: number, maxSide = 320): Promise<Buffer | null> {
  try {
    return await sharp(bytes, { limitInputPixels: maxPixels, sequentialRead: true })
      .rotate()
      .resize(maxSide, maxSide, { fit: 'inside', withoutEnlargement: true })
      .flatten({ background: '#ffffff' })
      .jpeg({ quality: 80 })
      .toBuffer();
  } catch {
    return null;
  }
}
