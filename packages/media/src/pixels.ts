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
 * watermark detector reads. Null when the bytes are not an image sharp decodes within `maxPixels`.
 */
export async function decodeRgb(bytes: Buffer, maxPixels: number): Promise<RgbPixels | null> {
  try {
    const { data, info } = await sharp(bytes, { failOn: 'error', limitInputPixels: maxPixels }).rotate().removeAlpha().toColourspace('srgb').raw().toBuffer({ resolveWithObject: true });
    return { pixels: data, width: info.width, height: info.height, channels: info.channels };
  } catch {
    return null;
  }
}
