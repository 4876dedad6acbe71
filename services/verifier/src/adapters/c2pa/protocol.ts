// What the verifier hands its reader children and gets back, over @cairn/isolate's IPC (structured clone, so
// Buffers travel as Uint8Array without base64). The asset itself goes through a private temp file, not IPC.
import type { C2paReading } from '../../domain/c2pa/types.js';

export interface ReadTask {
  /** Temp file holding the asset bytes. */
  path: string;
  mimeType: string;
  /** c2pa-rs settings JSON for this read (trust list included). */
  settings: string;
  /** A sidecar manifest store to validate against the asset (small: sent over IPC). */
  sidecar?: Uint8Array;
}

export function isReadTask(value: unknown): value is ReadTask {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Partial<ReadTask>;
  return (
    typeof v.path === 'string' &&
    typeof v.mimeType === 'string' &&
    typeof v.settings === 'string' &&
    (v.sidecar === undefined || v.sidecar instanceof Uint8Array)
  );
}

const READING_KINDS = new Set<string>(['none', 'manifest', 'malformed', 'unsupported', 'remote']);

export function isReading(value: unknown): value is C2paReading {
  if (typeof value !== 'object' || value === null) return false;
  const kind = (value as { kind?: unknown }).kind;
  return typeof kind === 'string' && READING_KINDS.has(kind);
}

/** Structured clone turns Buffers into plain Uint8Arrays; give the caller Buffers back. */
export function reviveReading(reading: C2paReading): C2paReading {
  if (reading.kind !== 'manifest') return reading;
  const toBuffer = (u8: Uint8Array): Buffer =>
    Buffer.isBuffer(u8) ? u8 : Buffer.from(u8.buffer, u8.byteOffset, u8.byteLength);
  return {
    ...reading,
    manifestStore: reading.manifestStore ? toBuffer(reading.manifestStore) : null,
    ...(reading.thumbnail
      ? { thumbnail: { mimeType: reading.thumbnail.mimeType, bytes: toBuffer(reading.thumbnail.bytes) } }
      : {}),
  };
}
