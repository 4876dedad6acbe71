import sharp from 'sharp';
import { hashPixels, PDQ_ALG, WORK_SIDE, type ImageFingerprinter, type PerceptualHash } from '../domain/pdq.js';

/** Decodes any image sharp reads (EXIF orientation applied, brought to WORK_SIDE × WORK_SIDE) and hashes it. */
export async function hashImageBytes(bytes: Buffer): Promise<PerceptualHash> {
  const { data, info } = await sharp(bytes, { failOn: 'error', limitInputPixels: 100_000_000 })
    .rotate()
    .removeAlpha()
    .toColourspace('srgb')
    .resize(WORK_SIDE, WORK_SIDE, { fit: 'fill', kernel: 'mitchell' })
    .raw()
    .toBuffer({ resolveWithObject: true });
  return hashPixels(data, info.width, info.height, info.channels);
}

export const pdqFingerprinter: ImageFingerprinter = { alg: PDQ_ALG, hashImage: hashImageBytes };
