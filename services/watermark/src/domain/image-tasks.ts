import type { ImageWatermarkAlgorithm } from './image/algorithm.js';
import { psnr } from './image/psnr.js';
import type { WorkerRequest, WorkerResponse } from './worker-protocol.js';

/**
 * Runs one request against the algorithm and says which buffers the answer may hand over. Kept apart from
 * the worker's message loop so that it can be tested without threads.
 */
export function runImageTask(algorithm: ImageWatermarkAlgorithm, request: WorkerRequest): { response: WorkerResponse; transfer: ArrayBuffer[] } {
  try {
    if (request.op === 'embed') {
      const marked = algorithm.embed(request.image, request.payload);
      const outcome = { image: marked, psnrDb: psnr(request.image, marked), algorithm: algorithm.name };
      return { response: { id: request.id, ok: true, op: 'embed', outcome }, transfer: transferable(marked.pixels) };
    }
    const detection = algorithm.detect(request.image);
    return { response: { id: request.id, ok: true, op: 'detect', outcome: { detection, algorithm: algorithm.name } }, transfer: [] };
  } catch (error) {
    const { name, message } = error instanceof Error ? error : new Error(String(error));
    return { response: { id: request.id, ok: false, error: { name, message } }, transfer: [] };
  }
}

/** The buffer behind `bytes` when handing it over loses nothing else (it is exactly that view). */
export function transferable(bytes: Uint8Array): ArrayBuffer[] {
  const buffer = bytes.buffer;
  return buffer instanceof ArrayBuffer && bytes.byteOffset === 0 && bytes.byteLength === buffer.byteLength ? [buffer] : [];
}
