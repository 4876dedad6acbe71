/**
 * Media type by magic bytes, never by file name or Content-Type: a .jpg holding PNG is PNG. Looks at the
 * first bytes only (SNIFF_BYTES), so callers can sniff a stream's head without buffering the whole file.
 */
export const SNIFF_BYTES = 64;

export type Modality = 'image' | 'audio' | 'video' | 'text';

export interface SniffedType {
  mediaType: string;
  modality: Modality;
  extension: string;
}

const ascii = (bytes: Uint8Array, offset: number, text: string) => {
  if (bytes.length < offset + text.length) return false;
  for (let i = 0; i < text.length; i++) if (bytes[offset + i] !== text.charCodeAt(i)) return false;
  return true;
};

const startsWith = (bytes: Uint8Array, signature: readonly number[]) => signature.every((b, i) => bytes[i] === b);

/** ISO BMFF brands that are audio-only MPEG-4 (M4A) rather than video. */
const AUDIO_BRANDS = new Set(['M4A ', 'M4B ', 'M4P ', 'F4A ', 'F4B ']);
/** Brands of still images in the ISO BMFF container (HEIF/AVIF): not video. */
const IMAGE_BRANDS = new Map([
  ['heic', 'image/heic'],
  ['heix', 'image/heic'],
  ['mif1', 'image/heif'],
  ['avif', 'image/avif'],
]);

function sniffBinary(bytes: Uint8Array): SniffedType | null {
  if (startsWith(bytes, [0xff, 0xd8, 0xff])) return { mediaType: 'image/jpeg', modality: 'image', extension: 'jpg' };
  if (startsWith(bytes, [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))
    return { mediaType: 'image/png', modality: 'image', extension: 'png' };
  if (ascii(bytes, 0, 'RIFF') && ascii(bytes, 8, 'WEBP'))
    return { mediaType: 'image/webp', modality: 'image', extension: 'webp' };
  if (ascii(bytes, 0, 'RIFF') && ascii(bytes, 8, 'WAVE'))
    return { mediaType: 'audio/wav', modality: 'audio', extension: 'wav' };
  if (ascii(bytes, 0, 'GIF87a') || ascii(bytes, 0, 'GIF89a'))
    return { mediaType: 'image/gif', modality: 'image', extension: 'gif' };
  if (startsWith(bytes, [0x49, 0x49, 0x2a, 0x00]) || startsWith(bytes, [0x4d, 0x4d, 0x00, 0x2a]))
    return { mediaType: 'image/tiff', modality: 'image', extension: 'tif' };
  if (ascii(bytes, 0, 'fLaC')) return { mediaType: 'audio/flac', modality: 'audio', extension: 'flac' };
  if (ascii(bytes, 0, 'OggS')) return { mediaType: 'audio/ogg', modality: 'audio', extension: 'ogg' };
  if (ascii(bytes, 0, 'ID3')) return { mediaType: 'audio/mpeg', modality: 'audio', extension: 'mp3' };
  // An MPEG audio frame header: 11 sync bits, a valid version, layer III, a valid bitrate and sample rate.
  if (bytes.length >= 4 && bytes[0] === 0xff && ((bytes[1] ?? 0) & 0xe0) === 0xe0) {
    const version = ((bytes[1] ?? 0) >> 3) & 0x3;
    const layer = ((bytes[1] ?? 0) >> 1) & 0x3;
    const bitrate = ((bytes[2] ?? 0) >> 4) & 0xf;
    const rate = ((bytes[2] ?? 0) >> 2) & 0x3;
    if (version !== 1 && layer === 1 && bitrate !== 0 && bitrate !== 0xf && rate !== 3)
      return { mediaType: 'audio/mpeg', modality: 'audio', extension: 'mp3' };
  }
  if (startsWith(bytes, [0x1a, 0x45, 0xdf, 0xa3])) {
    // EBML: the DocType says whether it is WebM or generic Matroska.
    const head = Buffer.from(bytes).toString('latin1');
    if (head.includes('webm')) return { mediaType: 'video/webm', modality: 'video', extension: 'webm' };
    return { mediaType: 'video/x-matroska', modality: 'video', extension: 'mkv' };
  }
  if (ascii(bytes, 4, 'ftyp')) {
    const brand = Buffer.from(bytes.subarray(8, 12)).toString('latin1');
    if (AUDIO_BRANDS.has(brand)) return { mediaType: 'audio/mp4', modality: 'audio', extension: 'm4a' };
    const image = IMAGE_BRANDS.get(brand);
    if (image) return { mediaType: image, modality: 'image', extension: image.split('/')[1] ?? 'heif' };
    if (brand === 'qt  ') return { mediaType: 'video/quicktime', modality: 'video', extension: 'mov' };
    return { mediaType: 'video/mp4', modality: 'video', extension: 'mp4' };
  }
  return null;
}

/** UTF-8 text without NUL or other binary control bytes (tab, newline and carriage return allowed). */
function looksLikeText(bytes: Uint8Array): boolean {
  if (bytes.length === 0) return false;
  for (const b of bytes) if (b === 0 || (b < 0x20 && b !== 0x09 && b !== 0x0a && b !== 0x0d)) return false;
  // A multi-byte character cut at the sniff boundary is still text.
  const decoded = new TextDecoder('utf-8', { fatal: false }).decode(bytes);
  const replacements = decoded.split('\uFFFD').length - 1;
  return replacements <= 1;
}

/** The media type of content by its first bytes, or null when it is none Cairn knows. */
export function sniffMediaType(head: Uint8Array): SniffedType | null {
  return (
    sniffBinary(head) ?? (looksLikeText(head) ? { mediaType: 'text/plain', modality: 'text', extension: 'txt' } : null)
  );
}
