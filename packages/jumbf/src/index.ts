// JUMBF (ISO/IEC 19566-5) box walking over a C2PA manifest store. Bounded: every box must fit inside its parent.
export interface JumbfBox {
  type: string;
  start: number;
  contentStart: number;
  end: number;
}

export function readBox(buf: Uint8Array, offset: number, limit: number): JumbfBox | undefined {
  if (offset + 8 > limit) return undefined;
  const view = new DataView(buf.buffer, buf.byteOffset + offset);
  const size32 = view.getUint32(0);
  const type = Buffer.from(buf.buffer, buf.byteOffset + offset + 4, 4).toString('latin1');
  let header = 8;
  let size: number;
  if (size32 === 1) {
    if (offset + 16 > limit) return undefined;
    const big = view.getBigUint64(8);
    if (big > BigInt(limit - offset)) return undefined;
    size = Number(big);
    header = 16;
  } else if (size32 === 0) {
    size = limit - offset;
  } else {
    size = size32;
  }
  if (size < header || offset + size > limit) return undefined;
  return { type, start: offset, contentStart: offset + header, end: offset + size };
}

export function childBoxes(buf: Uint8Array, parent: JumbfBox): JumbfBox[] {
  const out: JumbfBox[] = [];
  for (let offset = parent.contentStart; ;) {
    const child = readBox(buf, offset, parent.end);
    if (!child) return out;
    out.push(child);
    offset = child.end;
  }
}

/** Label of a superbox (from its leading `jumd`: 16-byte type UUID, toggles, NUL-terminated label if bit 1). */
export function superboxLabel(buf: Uint8Array, superbox: JumbfBox): string | undefined {
  const jumd = readBox(buf, superbox.contentStart, superbox.end);
  if (!jumd || jumd.type !== 'jumd') return undefined;
  const togglesAt = jumd.contentStart + 16;
  if (togglesAt >= jumd.end) return undefined;
  if (((buf[togglesAt] ?? 0) & 0x02) === 0) return undefined;
  const start = togglesAt + 1;
  let end = start;
  while (end < jumd.end && buf[end] !== 0) end++;
  return Buffer.from(buf.buffer, buf.byteOffset + start, end - start).toString('utf8');
}

export function findLabelled(buf: Uint8Array, parent: JumbfBox, label: string): JumbfBox | undefined {
  return childBoxes(buf, parent).find((box) => box.type === 'jumb' && superboxLabel(buf, box) === label);
}

/** Labels of the manifests in a store, in order (the active manifest is the last). */
export function manifestLabels(store: Uint8Array): string[] {
  const root = readBox(store, 0, store.length);
  if (!root || root.type !== 'jumb') return [];
  return childBoxes(store, root)
    .filter((b) => b.type === 'jumb')
    .map((b) => superboxLabel(store, b))
    .filter((l): l is string => l !== undefined);
}

/** The active manifest's label: per the C2PA spec, the last manifest of the store. */
export function activeManifestLabel(store: Uint8Array): string | undefined {
  return manifestLabels(store).at(-1);
}

/** A box with a 32-bit size (header included), its 4-character type and the content. */
export function writeBox(type: string, content: Uint8Array): Buffer {
  const header = Buffer.alloc(8);
  header.writeUInt32BE(8 + content.length, 0);
  header.write(type, 4, 'latin1');
  return Buffer.concat([header, content]);
}

/**
 * A superbox whose description box carries `label` (toggles 0x03: requestable, label present) and a 16-byte type
 * UUID (zero unless given), followed by `children`.
 */
export function writeSuperbox(
  label: string,
  children: Uint8Array[] = [],
  typeUuid: Uint8Array = new Uint8Array(16),
): Buffer {
  const description = writeBox(
    'jumd',
    Buffer.concat([typeUuid, Buffer.from([0x03]), Buffer.from(label, 'utf8'), Buffer.from([0])]),
  );
  return writeBox('jumb', Buffer.concat([description, ...children]));
}
