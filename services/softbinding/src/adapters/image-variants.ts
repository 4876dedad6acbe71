import sharp from 'sharp';
import type { ImageFingerprinter, PerceptualHash } from '../domain/pdq.js';

/**
 * The hashes indexed for one signed image. A DCT hash moves a lot under cropping (a 5% crop shifts the
 * 64×64 grid by ~3 cells: distance 60–110 measured, as far as unrelated images), so the index also holds the
 * hashes of 5% crops anchored at each corner and at the centre: a crop of the signed file then lands near one
 * of them (measured: ≤ 16 for photos after JPEG 60 + 50% resize + 5% crop). The query side hashes once.
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
  const out: IndexedHash[] = [{ ...(await fingerprinter.hashImage(png.data)), variant: 'full' }];
  const w = Math.round(width * (1 - CROP_FRACTION));
  const h = Math.round(height * (1 - CROP_FRACTION));
  for (const [name, [ax, ay]] of Object.entries(ANCHORS)) {
    const crop = await sharp(png.data)
      .extract({ left: Math.round((width - w) * ax), top: Math.round((height - h) * ay), width: w, height: h })
      .png({ compressionLevel: 0 })
      .toBuffer();
    out.push({ ...(await fingerprinter.hashImage(crop)), variant: `crop5-${name}` });
  }
  return out;
}
