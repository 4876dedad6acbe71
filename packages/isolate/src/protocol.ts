// Messages between a WorkerPool and its child processes (IPC with `serialization: 'advanced'`: Buffers travel
// as Uint8Array, no base64). A task may ask the parent for things only the parent has (a signature made with a
// key that never enters the child) through `call` / `call-result` while it runs.

export type ParentMessage =
  | { type: 'task'; id: number; payload: unknown }
  | { type: 'call-result'; id: number; callId: number; ok: true; value: unknown }
  | { type: 'call-result'; id: number; callId: number; ok: false; message: string };

export type ChildMessage =
  | { type: 'ready' }
  | { type: 'done'; id: number; value: unknown }
  /** The task's handler threw: an answer about the input (e.g. a parser refused it), not a crash. */
  | { type: 'failed'; id: number; name: string; message: string }
  | { type: 'call'; id: number; callId: number; payload: unknown };

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

export function isChildMessage(value: unknown): value is ChildMessage {
  if (!isObject(value)) return false;
  switch (value.type) {
    case 'ready':
      return true;
    case 'done':
      return typeof value.id === 'number';
    case 'failed':
      return typeof value.id === 'number' && typeof value.name === 'string' && typeof value.message === 'string';
    case 'call':
      return typeof value.id === 'number' && typeof value.callId === 'number';
    default:
      return false;
  }
}

export function isParentMessage(value: unknown): value is ParentMessage {
  if (!isObject(value) || typeof value.id !== 'number') return false;
  if (value.type === 'task') return true;
  return value.type === 'call-result' && typeof value.callId === 'number' && typeof value.ok === 'boolean';
}

/** Structured clone turns Buffers into plain Uint8Arrays; hand Buffers back to callers that expect them. */
export function asBuffer(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
