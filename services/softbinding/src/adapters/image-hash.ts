import sharp from 'sharp';
import {
  hashPixels,
  PDQ_ALG,
  WORK_SIDE,
  type ImageFingerprinter,
  type PerceptualHash,
  type PixelRegion,
  type RawPixelLayout,
} from '../domain/pdq.js';

/** Decodes any image sharp reads (EXIF orientation applied, brought to WORK_SIDE × WORK_SIDE) and hashes it. */
export async function hashImageBytes(bytes: Buffer): Promise<PerceptualHash> {
  return hashOf(sharp(bytes, { failOn: 'error', limitInputPixels: 100_000_000 }).rotate());
}

/**
 * The same hash of pixels already decoded (8 bits per channel, rows top to bottom), or of a region of them: what
 * hashImageBytes gives for a lossless file of these pixels (of that region), without writing and decoding one.
 */
export async function hashRawPixels(
  pixels: Buffer,
  raw: RawPixelLayout,
  region?: PixelRegion,
): Promise<PerceptualHash> {
  const image = sharp(pixels, { raw });
  return hashOf(region ? image.extract(region) : image);
}

async function hashOf(image: sharp.Sharp): Promise<PerceptualHash> {
  const { data, info } = await image
    .removeAlpha()
    .toColourspace('srgb')
    .resize(WORK_SIDE, WORK_SIDE, { fit: 'fill', kernel: 'mitchell' })
    .raw()
    .toBuffer({ resolveWithObject: true });
  return hashPixels(data, info.width, info.height, info.channels);
}

export const pdqFingerprinter: ImageFingerprinter = {
  alg: PDQ_ALG,
  hashImage: hashImageBytes,
  hashPixels: hashRawPixels,
};
