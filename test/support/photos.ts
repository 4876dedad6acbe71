import { readFile } from 'node:fs/promises';
import sharp from 'sharp';
import { SHARED_DIR } from '../../packages/testing/src/shared.js';

/** A photo of the shared fixtures (fixtures/photos/<name>.png) as a JPEG, at sharp's default quality unless given. */
export async function photoJpeg(name: string, quality?: number): Promise<Buffer> {
  return sharp(await readFile(`${SHARED_DIR}/fixtures/photos/${name}.png`))
    .jpeg(quality === undefined ? {} : { quality })
    .toBuffer();
}
