import { readdir, readFile } from 'node:fs/promises';
import sharp from 'sharp';
import { SHARED_DIR } from '../../../../packages/testing/src/shared.js';

export const SHARED_PHOTOS = `${SHARED_DIR}/fixtures/photos`;
export const OWN_PHOTOS = new URL('../fixtures/', import.meta.url).pathname;

export interface Photo {
  name: string;
  bytes: Buffer;
}

/** The shared photos plus this service's own (scikit-image sample data, see fixtures/README.md). */
export async function loadPhotos(): Promise<Photo[]> {
  const photos: Photo[] = [];
  for (const dir of [SHARED_PHOTOS, OWN_PHOTOS]) {
    for (const file of (await readdir(dir)).sort()) {
      if (!/\.(png|jpe?g)$/.test(file)) continue;
      photos.push({
        name: file.replace(/\.[^.]+$/, ''),
        bytes: await readFile(`${dir}${dir.endsWith('/') ? '' : '/'}${file}`),
      });
    }
  }
  return photos;
}

export const jpeg60 = (b: Buffer) => sharp(b).jpeg({ quality: 60 }).toBuffer();

export async function resize50(b: Buffer): Promise<Buffer> {
  const m = await sharp(b).metadata();
  return sharp(b)
    .resize(Math.round(m.width / 2), Math.round(m.height / 2))
    .png()
    .toBuffer();
}

/** Removes 5% of the width and of the height, off the right and bottom edges. */
export async function crop5(b: Buffer): Promise<Buffer> {
  const m = await sharp(b).metadata();
  return sharp(b)
    .extract({ left: 0, top: 0, width: Math.round(m.width * 0.95), height: Math.round(m.height * 0.95) })
    .png()
    .toBuffer();
}

export const brightness = (factor: number) => (b: Buffer) => sharp(b).modulate({ brightness: factor }).png().toBuffer();

/** JPEG 60 of a 50% resize of a 5% crop: all three at once, the worst case. */
export const combined = async (b: Buffer) => jpeg60(await resize50(await crop5(b)));

export const TRANSFORMS: Record<string, (b: Buffer) => Promise<Buffer>> = {
  jpeg60,
  resize50,
  crop5,
  'brightness+20%': brightness(1.2),
  'brightness-20%': brightness(0.8),
  'jpeg60+resize50+crop5': combined,
};
