import type { Detection } from './image/algorithm.js';
import { createKeyedImageWatermark } from './image/cairn-dct-keyed-v1.js';
import { CAIRN_DCT_V1, CAIRN_DCT_V1_NAME } from './image/cairn-dct-v1.js';
import { DctQimWatermark } from './image/dct-qim.js';
import { psnr } from './image/psnr.js';
import type { RawImage } from './image/raw-image.js';
import type { WatermarkKey } from './keys.js';
import type { DetectOutcome, WorkerRequest, WorkerResponse } from './worker-protocol.js';

/**
 * The image watermarks a worker runs: keyless cairn-dct-v1 and cairn-dct-keyed-v1 under each key it is handed.
 * A keyed layout is built once per key id (keys only change with a restart) and reused.
 */
export class ImageAlgorithms {
  readonly keyless = new DctQimWatermark(CAIRN_DCT_V1_NAME, CAIRN_DCT_V1);
  private readonly keyed = new Map<string, { readonly secret: Buffer; readonly algorithm: DctQimWatermark }>();

  forKey(key: WatermarkKey): DctQimWatermark {
    const secret = Buffer.from(key.secret);
    const known = this.keyed.get(key.kid);
    if (known && known.secret.equals(secret)) return known.algorithm;
    const algorithm = createKeyedImageWatermark(secret);
    this.keyed.set(key.kid, { secret, algorithm });
    return algorithm;
  }

  /**
   * The first of the keys (in order), then the keyless algorithm, that reads a mark. The luma grid is
   * computed once for all of them: with several keys the extra cost is the per-slot projections only.
   */
  detect(image: RawImage, keys: ReadonlyArray<WatermarkKey>): DetectOutcome {
    const candidates: Array<{ algorithm: DctQimWatermark; keyId: string | null }> = [
      ...keys.map((key) => ({ algorithm: this.forKey(key), keyId: key.kid })),
      { algorithm: this.keyless, keyId: null },
    ];
    const grids = new Map<number, Float32Array | null>();
    for (const { algorithm, keyId } of candidates) {
      if (!grids.has(algorithm.gridSize)) grids.set(algorithm.gridSize, algorithm.lumaOf(image));
      const luma = grids.get(algorithm.gridSize);
      const detection: Detection | null = luma ? algorithm.detectLuma(luma) : null;
      if (detection) return { detection, algorithm: algorithm.name, keyId };
    }
    return { detection: null, algorithm: candidates[0]!.algorithm.name, keyId: null };
  }
}

/**
 * Runs one request and says which buffers the answer may hand over. Kept apart from the worker's message loop
 * so that it can be tested without threads.
 */
export function runImageTask(algorithms: ImageAlgorithms, request: WorkerRequest): { response: WorkerResponse; transfer: ArrayBuffer[] } {
  try {
    if (request.op === 'embed') {
      const algorithm = request.key ? algorithms.forKey(request.key) : algorithms.keyless;
      const marked = algorithm.embed(request.image, request.payload);
      const outcome = { image: marked, psnrDb: psnr(request.image, marked), algorithm: algorithm.name, keyId: request.key?.kid ?? null };
      return { response: { id: request.id, ok: true, op: 'embed', outcome }, transfer: transferable(marked.pixels) };
    }
    const outcome = algorithms.detect(request.image, request.keys ?? []);
    return { response: { id: request.id, ok: true, op: 'detect', outcome }, transfer: [] };
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
