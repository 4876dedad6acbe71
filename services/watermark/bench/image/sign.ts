// An image marked as a sign marks it (app/embed-image.ts): cairn-sync-v2 from the content-adaptive start level,
// encoded in the upload's format, decoded as a verify decodes, read back, and embedded one level stronger while it
// does not read. Shared by the low-texture class and the image content-check bench.
import { decodeRgb, encodeImage } from '../../../../packages/media/src/pixels.js';
import { SyncTileWatermark, SYNC_STRENGTH_LEVELS } from '../../src/domain/image/cairn-sync-v2.js';
import type { Channels, RawImage } from '../../src/domain/image/raw-image.js';
import { startLevel } from '../../src/domain/image/readback.js';

export interface SignedImage {
  /** The signed file's bytes, and its pixels as a verify decodes them. */
  readonly encoded: Buffer;
  readonly image: RawImage;
  /** The strength level whose mark read back. */
  readonly level: number;
  /** The content description the registry keeps (the first level's: the content is the same at every level). */
  readonly content: Uint8Array;
}

const hex = (p: Uint8Array) => Buffer.from(p).toString('hex');

/** Null when no level reads back (the sign answers watermark_not_embedded, without a mark). */
export async function signImage(
  wm: SyncTileWatermark,
  host: RawImage,
  format: 'image/jpeg' | 'image/png',
  payload: Uint8Array,
  first = startLevel(host),
): Promise<SignedImage | null> {
  let content: Uint8Array | undefined;
  for (let level = first; level < SYNC_STRENGTH_LEVELS.length; level++) {
    const marked = wm.embedDescribed(host, payload, { level });
    content ??= marked.content;
    const encoded = await encodeImage(
      {
        width: marked.image.width,
        height: marked.image.height,
        channels: 3,
        pixels: Buffer.from(marked.image.pixels.buffer, marked.image.pixels.byteOffset, marked.image.pixels.byteLength),
      },
      format,
    );
    const decoded = (await decodeRgb(encoded, 1e8))!;
    const image: RawImage = {
      pixels: new Uint8Array(decoded.pixels.buffer, decoded.pixels.byteOffset, decoded.pixels.byteLength),
      width: decoded.width,
      height: decoded.height,
      channels: decoded.channels as Channels,
    };
    const read = wm.detect(image);
    if (read && hex(read.payload) === hex(payload)) return { encoded, image, level, content };
  }
  return null;
}
