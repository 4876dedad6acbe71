// Messages between the verifier and its reader child (IPC with `serialization: 'advanced'`, so Buffers
// travel as Uint8Array without base64). The asset itself goes through a private temp file, not IPC.
import type { C2paReading } from '../../domain/c2pa/types.js';

export interface ReadRequest {
  type: 'read';
  id: number;
  /** Temp file holding the asset bytes. */
  path: string;
  mimeType: string;
  /** c2pa-rs settings JSON for this read (trust list included). */
  settings: string;
  /** A sidecar manifest store to validate against the asset (small: sent over IPC). */
  sidecar?: Uint8Array;
}

export type ChildMessage =
  | { type: 'ready' }
  | { type: 'result'; id: number; reading: C2paReading }
  /** The settings were refused: a configuration problem, not something about the file. */
  | { type: 'settings-error'; id: number; detail: string };

export function isChildMessage(value: unknown): value is ChildMessage {
  if (typeof value !== 'object' || value === null) return false;
  const type = (value as { type?: unknown }).type;
  return type === 'ready' || type === 'result' || type === 'settings-error';
}

export function isReadRequest(value: unknown): value is ReadRequest {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Partial<ReadRequest>;
  return (
    v.type === 'read' &&
    typeof v.id === 'number' &&
    typeof v.path === 'string' &&
    typeof v.mimeType === 'string' &&
    typeof v.settings === 'string' &&
    (v.sidecar === undefined || v.sidecar instanceof Uint8Array)
  );
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
