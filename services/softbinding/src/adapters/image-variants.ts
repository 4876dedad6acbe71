import sharp from 'sharp';
import type { ImageFingerprinter, PerceptualHash } from '../domain/pdq.js';

/**
 * The hashes indexed for one signed image. A DCT hash moves a lot under cropping (a 5% crop shifts the
 * 64×64 grid by ~3 cells: distance 60–110 measured, as far as unrelated images), so the index also holds the
 * hashes of 5% crops anchored at each corner and at the centre: a crop of the signed file then lands near one
 * of them (measured: ≤ 16 for photos after JPEG 60 + 50% resize + 5% crop). Each of those six is also hashed at
 * a quarter of its size (`…@quarter`): fine detail (line art, a text page, motion blur) that a downscale or a
 * brightening wipes out moves the full-size hash 34–46 bits, the quarter-size one ≤ 30 (measured on the transform
 * set, issue #17). The query side hashes once.
 */
export const CROP_FRACTION = 0.05;
const ANCHORS = { tl: [0, 0], tr: [1, 0], bl: [0, 1], br: [1, 1], c: [0.5, 0.5] } as const;

export interface IndexedHash extends PerceptualHash {
  variant: string;
}

export async function indexHashes(fingerprinter: ImageFingerprinter, bytes: Buffer): Promise<IndexedHash[]> {
  const image = sharp(bytes, { failOn: 'error', limitInputPixels: 100_000_000 }).rotate();
  const png = await image.png({ compressionLevel: 0 }).toBuffer({ resolveWithObject: true });
  const { width, height } = png.info;
  const out: IndexedHash[] = [];
  // The quarter of the whole image is taken from the file itself (one resampling, not two: measured 2 bits nearer).
  const both = async (image: Buffer, w: number, h: number, variant: string, source = sharp(image)) => {
    out.push({ ...(await fingerprinter.hashImage(image)), variant });
    const quarter = await source
      .resize(Math.max(1, Math.round(w / 4)), Math.max(1, Math.round(h / 4)), { fit: 'fill' })
      .png({ compressionLevel: 0 })
      .toBuffer();
    out.push({ ...(await fingerprinter.hashImage(quarter)), variant: `${variant}@quarter` });
  };
  await both(
    png.data,
    width,
    height,
    'full',
    sharp(bytes, { failOn: 'error', limitInputPixels: 100_000_000 }).rotate(),
  );
  const w = Math.round(width * (1 - CROP_FRACTION));
  const h = Math.round(height * (1 - CROP_FRACTION));
  for (const [name, [ax, ay]] of Object.entries(ANCHORS)) {
    const crop = await sharp(png.data)
      .extract({ left: Math.round((width - w) * ax), top: Math.round((height - h) * ay), width: w, height: h })
      .png({ compressionLevel: 0 })
      .toBuffer();
    await both(crop, w, h, `crop5-${name}`);
  }
  return out;
}
