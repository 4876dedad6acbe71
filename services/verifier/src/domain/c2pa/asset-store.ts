// Finds the embedded C2PA manifest store (JUMBF bytes) in an asset's container, reading only headers through
// random access so a 100 MB video is never loaded whole. c2pa-node's Reader validates the store but does not
// hand its bytes back; the verifier needs them for the certificate chain and to compare with the manifest
// served at manifest_uri / anchored on chain. Covers the containers Cairn signs most (JPEG APP11, PNG caBX,
// RIFF C2PA chunk for WAV/WebP/AVI, BMFF C2PA uuid box); other formats return null.
import { superboxLabel } from '@cairn/jumbf';

export interface RandomAccess {
  readonly size: number;
  read(offset: number, length: number): Buffer;
}

/** Largest store accepted (c2pa-rs caps decompressed manifests at 32 MB by default). */
const MAX_STORE_BYTES = 64 * 1024 * 1024;
/** Most container headers walked before giving up (a hostile file can declare endless tiny chunks). */
const MAX_ITEMS = 100_000;

export function bufferAccess(buf: Buffer): RandomAccess {
  return {
    size: buf.length,
    read: (offset, length) => buf.subarray(Math.max(0, offset), Math.min(buf.length, offset + Math.max(0, length))),
  };
}

/** Exactly `length` bytes at `offset`, or null when the file ends first (a truncated container). */
function whole(src: RandomAccess, offset: number, length: number): Buffer | null {
  const data = src.read(offset, length);
  return data.length === length ? data : null;
}

function concatBounded(parts: Buffer[]): Buffer | null {
  const total = parts.reduce((n, p) => n + p.length, 0);
  return total > 0 && total <= MAX_STORE_BYTES ? Buffer.concat(parts, total) : null;
}

/** JPEG: APP11 segments `JP` + box instance (2) + sequence (4) + JUMBF; continuations repeat the box header. */
function fromJpeg(src: RandomAccess): Buffer | null {
  const groups = new Map<number, Array<{ seq: number; data: Buffer }>>();
  let offset = 2;
  for (let items = 0; items < MAX_ITEMS && offset + 4 <= src.size; items++) {
    const head = src.read(offset, 4);
    if (head[0] !== 0xff) return null;
    const marker = head[1] ?? 0;
    if (marker === 0xff) {
      offset += 1; // fill byte
      continue;
    }
    if (marker === 0xd8 || marker === 0x01 || (marker >= 0xd0 && marker <= 0xd7)) {
      offset += 2;
      continue;
    }
    if (marker === 0xda || marker === 0xd9) break; // scan data follows: no more metadata segments
    const length = head.readUInt16BE(2);
    if (length < 2) return null;
    if (marker === 0xeb && length > 2 + 8) {
      const seg = src.read(offset + 4, length - 2);
      if (seg.toString('latin1', 0, 2) === 'JP') {
        const instance = seg.readUInt16BE(2);
        const seq = seg.readUInt32BE(4);
        const list = groups.get(instance) ?? [];
        list.push({ seq, data: seg.subarray(8) });
        groups.set(instance, list);
      }
    }
    offset += 2 + length;
  }
  for (const packets of groups.values()) {
    packets.sort((a, b) => a.seq - b.seq);
    const first = packets[0]?.data;
    if (!first || first.length < 16 || first.toString('latin1', 4, 8) !== 'jumb') continue;
    // The C2PA store's description box is labelled "c2pa"; other JUMBF (e.g. JPEG 360) is skipped.
    const headerLen = first.readUInt32BE(0) === 1 ? 16 : 8;
    if (superboxLabel(first, { type: 'jumb', start: 0, contentStart: headerLen, end: first.length }) !== 'c2pa')
      continue;
    // Every packet repeats the superbox's LBox/TBox(/XLBox); only the first keeps it.
    return concatBounded(packets.map((p, i) => (i === 0 ? p.data : p.data.subarray(headerLen))));
  }
  return null;
}

/** PNG: the whole store is the data of a `caBX` chunk. */
function fromPng(src: RandomAccess): Buffer | null {
  return fromChunks(src, 8, 'caBX', 'IEND', (head) => {
    const length = head.readUInt32BE(0);
    return { type: head.toString('latin1', 4, 8), length, next: 12 + length };
  });
}

/** RIFF (WAV, WebP, AVI): a top-level `C2PA` chunk; sizes are little-endian, chunks padded to even length. */
function fromRiff(src: RandomAccess): Buffer | null {
  return fromChunks(src, 12, 'C2PA', undefined, (head) => {
    const length = head.readUInt32LE(4);
    return { type: head.toString('latin1', 0, 4), length, next: 8 + length + (length % 2) };
  });
}

/**
 * A flat run of chunks from `offset`, each an 8-byte header (which `header` reads: its type, its data's length and
 * how far the next chunk is) and its data: the store is the data of the `store` chunk; none follows an `end` chunk.
 */
function fromChunks(
  src: RandomAccess,
  offset: number,
  store: string,
  end: string | undefined,
  header: (head: Buffer) => { type: string; length: number; next: number },
): Buffer | null {
  for (let items = 0; items < MAX_ITEMS && offset + 8 <= src.size; items++) {
    const { type, length, next } = header(src.read(offset, 8));
    if (type === store) return length <= MAX_STORE_BYTES ? whole(src, offset + 8, length) : null;
    if (type === end) return null;
    offset += next;
  }
  return null;
}

const C2PA_UUID = Buffer.from('d8fec3d61b0e483c92975828877ec481', 'hex');

/** ISO BMFF (MP4, MOV, HEIF, AVIF, M4A): top-level `uuid` box with the C2PA uuid and purpose "manifest". */
function fromBmff(src: RandomAccess): Buffer | null {
  let offset = 0;
  for (let items = 0; items < MAX_ITEMS && offset + 8 <= src.size; items++) {
    const head = src.read(offset, 16);
    let size = head.readUInt32BE(0);
    const type = head.toString('latin1', 4, 8);
    let header = 8;
    if (size === 1) {
      if (head.length < 16) return null;
      const big = head.readBigUInt64BE(8);
      if (big > BigInt(src.size)) return null;
      size = Number(big);
      header = 16;
    } else if (size === 0) {
      size = src.size - offset;
    }
    if (size < header) return null;
    if (type === 'uuid' && size <= MAX_STORE_BYTES + 1024) {
      const body = whole(src, offset + header, size - header);
      if (body && body.length >= 16 + 4 && body.subarray(0, 16).equals(C2PA_UUID)) {
        const purposeStart = 20; // uuid + version/flags
        const nul = body.indexOf(0, purposeStart);
        if (nul !== -1 && body.toString('latin1', purposeStart, nul) === 'manifest') {
          return body.subarray(nul + 1 + 8); // skip the 8-byte merkle offset
        }
      }
    }
    offset += size;
  }
  return null;
}

export function extractManifestStore(src: RandomAccess): Buffer | null {
  const magic = src.read(0, 12);
  if (magic.length < 12) return null;
  if (magic[0] === 0xff && magic[1] === 0xd8) return fromJpeg(src);
  if (magic.readUInt32BE(0) === 0x89504e47) return fromPng(src);
  if (magic.toString('latin1', 0, 4) === 'RIFF') return fromRiff(src);
  const boxType = magic.toString('latin1', 4, 8);
  if (['ftyp', 'moov', 'mdat', 'free', 'skip', 'wide', 'uuid'].includes(boxType)) return fromBmff(src);
  return null;
}
