/** Most segments or chunks walked before giving up (a hostile file can declare endless tiny ones). */
const MAX_ITEMS = 100_000;

/**
 * The parts of an image file its pixels are decoded from, in order: the file less its C2PA manifest store (JPEG
 * APP11 segments, the PNG `caBX` chunk). Signing adds only those, so a file and its signed copy give the same parts,
 * and equal parts decode to equal pixels: the decoders read neither. Undefined for other formats and for a file
 * whose structure does not walk to its end (the caller decodes it instead).
 */
export function partsWithoutC2pa(file: Uint8Array): Uint8Array[] | undefined {
  if (file.length >= 4 && file[0] === 0xff && file[1] === 0xd8) return jpegParts(file);
  if (file.length >= 8 && Buffer.from(file.buffer, file.byteOffset, 8).equals(PNG_SIGNATURE)) return pngParts(file);
  return undefined;
}

const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** JPEG: every segment up to the first scan, less APP11 (where C2PA keeps its JUMBF); from the scan on, as it is. */
function jpegParts(file: Uint8Array): Uint8Array[] | undefined {
  const parts: Uint8Array[] = [file.subarray(0, 2)];
  let offset = 2;
  for (let items = 0; items < MAX_ITEMS; items++) {
    if (offset + 4 > file.length || file[offset] !== 0xff) return undefined;
    const marker = file[offset + 1]!;
    if (marker === 0xda) {
      parts.push(file.subarray(offset));
      return parts;
    }
    // Standalone markers and fill bytes carry nothing the walk needs; any of them before a scan is unusual enough
    // to leave to the decoder.
    if (marker === 0xff || marker === 0xd8 || marker === 0xd9 || marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7))
      return undefined;
    const end = offset + 2 + ((file[offset + 2]! << 8) | file[offset + 3]!);
    if (end <= offset + 3 || end > file.length) return undefined;
    if (marker !== 0xeb) parts.push(file.subarray(offset, end));
    offset = end;
  }
  return undefined;
}

/** PNG: every chunk up to and including IEND, less `caBX` (the C2PA store). */
function pngParts(file: Uint8Array): Uint8Array[] | undefined {
  const parts: Uint8Array[] = [file.subarray(0, 8)];
  const view = new DataView(file.buffer, file.byteOffset, file.byteLength);
  let offset = 8;
  for (let items = 0; items < MAX_ITEMS; items++) {
    if (offset + 12 > file.length) return undefined;
    const end = offset + 12 + view.getUint32(offset);
    if (end > file.length) return undefined;
    const type = Buffer.from(file.buffer, file.byteOffset + offset + 4, 4).toString('latin1');
    if (type !== 'caBX') parts.push(file.subarray(offset, end));
    if (type === 'IEND') return end === file.length ? parts : undefined;
    offset = end;
  }
  return undefined;
}
