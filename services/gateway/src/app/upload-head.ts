import type { BlobStore } from '@cairn/blob';
import { SNIFF_BYTES } from '@cairn/sniff';

// Lives in app/: it reads through the injected BlobStore port and does no I/O of its own.

/** The first bytes of a stored upload (enough to tell its media type), without reading the rest; null when it is gone. */
export async function uploadHead(blobs: BlobStore, key: string): Promise<Buffer | null> {
  const stream = await blobs.get(key);
  if (!stream) return null;
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      chunks.push(chunk);
      size += chunk.length;
      if (size >= SNIFF_BYTES) break;
    }
  } finally {
    stream.destroy();
  }
  return Buffer.concat(chunks).subarray(0, SNIFF_BYTES);
}
