import sharp from 'sharp';
import type { IndexedHash } from '../app/ports.js';
import type { ImageFingerprinter, PerceptualHash, PixelRegion, RawPixelLayout } from '../domain/pdq.js';

/**
 * The hashes indexed for one signed image. A DCT hash moves a lot under cropping (a 5% crop shifts the
 * 64×64 grid by ~3 cells: distance 60–110 measured, as far as unrelated images), so the index also holds the
 * hashes of 5% crops anchored at each corner and at the centre: a crop of the signed file then lands near one
 * of them (measured: ≤ 16 for photos after JPEG 60 + 50% resize + 5% crop). Each of those six is also hashed at
 * a quarter of its size (`…@quarter`): fine detail (line art, a text page, motion blur) that a downscale or a
 * brightening wipes out moves the full-size hash 34–46 bits, the quarter-size one ≤ 30 (measured on the transform
 * set; docs/decisions/0039-softbinding-index-in-memory.md). The query side hashes once.
 */
export const CROP_FRACTION = 0.05;
const ANCHORS = { tl: [0, 0], tr: [1, 0], bl: [0, 1], br: [1, 1], c: [0.5, 0.5] } as const;
const INPUT = { failOn: 'error', limitInputPixels: 100_000_000 } as const;

/** A picture between two steps (the decoded file, a crop, a quarter), to cut, shrink or hash. */
interface Kept {
  readonly width: number;
  readonly height: number;
  open(): sharp.Sharp;
  hash(): Promise<PerceptualHash>;
  cut(region: PixelRegion): Promise<Kept>;
}

export async function indexHashes(fingerprinter: ImageFingerprinter, bytes: Buffer): Promise<IndexedHash[]> {
  // Each step's picture was a lossless PNG that the next step decoded again: about 100 ms of CPU for a 1 MP photo,
  // twenty times a decode. A file of 8 bits per channel (every watermarked output) is kept as its raw pixels
  // instead, the very values that PNG held, and a crop is a region of them read in place (cutting is copying), so
  // every hash is the same; a deeper file keeps the PNG steps.
  const eightBit = (await sharp(bytes, INPUT).metadata()).depth === 'uchar';
  const inPlace = (data: Buffer, raw: RawPixelLayout, region?: PixelRegion): Kept => ({
    width: region?.width ?? raw.width,
    height: region?.height ?? raw.height,
    open: () => (region ? sharp(data, { raw }).extract(region) : sharp(data, { raw })),
    hash: () => fingerprinter.hashPixels(data, raw, region),
    cut: (inner) => Promise.resolve(inPlace(data, raw, inner)),
  });
  const keep = async (image: sharp.Sharp): Promise<Kept> => {
    if (eightBit) {
      const { data, info } = await image.raw().toBuffer({ resolveWithObject: true });
      return inPlace(data, { width: info.width, height: info.height, channels: info.channels });
    }
    const { data, info } = await image.png({ compressionLevel: 0 }).toBuffer({ resolveWithObject: true });
    const kept: Kept = {
      width: info.width,
      height: info.height,
      open: () => sharp(data),
      hash: () => fingerprinter.hashImage(data),
      cut: (region) => keep(kept.open().extract(region)),
    };
    return kept;
  };
  const out: IndexedHash[] = [];
  const both = async (kept: Kept, variant: string, source = kept.open()) => {
    out.push({ ...(await kept.hash()), variant });
    const quarter = await keep(
      source.resize(Math.max(1, Math.round(kept.width / 4)), Math.max(1, Math.round(kept.height / 4)), {
        fit: 'fill',
      }),
    );
    out.push({ ...(await quarter.hash()), variant: `${variant}@quarter` });
  };
  const whole = await keep(sharp(bytes, INPUT).rotate());
  const { width, height } = whole;
  // The quarter of the whole image is taken from the file itself (one resampling, not two: measured 2 bits nearer).
  await both(whole, 'full', sharp(bytes, INPUT).rotate());
  const w = Math.round(width * (1 - CROP_FRACTION));
  const h = Math.round(height * (1 - CROP_FRACTION));
  for (const [name, [ax, ay]] of Object.entries(ANCHORS)) {
    const crop = await whole.cut({
      left: Math.round((width - w) * ax),
      top: Math.round((height - h) * ay),
      width: w,
      height: h,
    });
    await both(crop, `crop5-${name}`);
  }
  return out;
}
