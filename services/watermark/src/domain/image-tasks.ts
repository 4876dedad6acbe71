import type { Detection } from './image/algorithm.js';
import { createKeyedImageWatermark } from './image/cairn-dct-keyed-v1.js';
import { analyseSync, CAIRN_SYNC_V2_NAME, SyncTileWatermark } from './image/cairn-sync-v2.js';
import { CAIRN_DCT_V1, CAIRN_DCT_V1_NAME } from './image/cairn-dct-v1.js';
import { registeredPoints } from './image/content-registration.js';
import { startLevelOfGrid } from './image/readback.js';
import { DctQimWatermark } from './image/dct-qim.js';
import type { RawImage } from './image/raw-image.js';
import type { WatermarkKey } from './keys.js';
import type { DetectOutcome, KeyedAlgorithmName, WorkerRequest, WorkerResponse } from './worker-protocol.js';

/** What new keyed marks are written with once the embed path names it (EmbedImage records this name). */
export const NEW_KEYED_ALGORITHM: KeyedAlgorithmName = CAIRN_SYNC_V2_NAME;

/**
 * The image watermarks a worker runs: keyless cairn-dct-v1, and cairn-sync-v2 and cairn-dct-keyed-v1 under each
 * key it is handed. A keyed layout is built once per key id (keys only change with a restart) and reused.
 */
export class ImageAlgorithms {
  readonly keyless = new DctQimWatermark(CAIRN_DCT_V1_NAME, CAIRN_DCT_V1);
  private readonly keyed = new Map<
    string,
    { readonly secret: Buffer; readonly algorithm: DctQimWatermark; readonly sync: SyncTileWatermark }
  >();

  forKey(key: WatermarkKey): DctQimWatermark {
    return this.layoutsOf(key).algorithm;
  }

  syncForKey(key: WatermarkKey): SyncTileWatermark {
    return this.layoutsOf(key).sync;
  }

  /** The algorithm an embed request names (keyed ones under its key). */
  forEmbed(
    key: WatermarkKey | undefined,
    algorithm: KeyedAlgorithmName | undefined,
  ): DctQimWatermark | SyncTileWatermark {
    if (!key) return this.keyless;
    return algorithm === CAIRN_SYNC_V2_NAME ? this.syncForKey(key) : this.forKey(key);
  }

  private layoutsOf(key: WatermarkKey): { readonly algorithm: DctQimWatermark; readonly sync: SyncTileWatermark } {
    const secret = Buffer.from(key.secret);
    const known = this.keyed.get(key.kid);
    if (known && known.secret.equals(secret)) return known;
    const layouts = { secret, algorithm: createKeyedImageWatermark(secret), sync: new SyncTileWatermark(secret) };
    this.keyed.set(key.kid, layouts);
    return layouts;
  }

  /**
   * The first of the keys (in order), then the keyless algorithm, that reads a mark. The luma grid is
   * computed once for all of them: with several keys the extra cost is the per-slot projections only.
   */
  detect(
    image: RawImage,
    keys: ReadonlyArray<WatermarkKey>,
    syncGridAreas: ReadonlyArray<number | undefined> = [undefined],
    { syncOnly = false }: { syncOnly?: boolean } = {},
  ): DetectOutcome {
    // The v1 marks (keyed and keyless, every mark issued before cairn-sync-v2) are cheap to read and never read a
    // v2 mark: tried first. The v2 analysis (lattice and folds, key-independent, made once; each key then only
    // correlates and decodes) runs when none of them reads a mark.
    const candidates: Array<{ algorithm: DctQimWatermark; keyId: string | null }> = syncOnly
      ? []
      : [
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
    for (const gridArea of keys.length > 0 ? syncGridAreas : []) {
      const analysis = analyseSync(image, undefined, gridArea);
      if (!analysis) continue;
      for (const key of keys) {
        const read = this.syncForKey(key).decodeRegistered(analysis);
        if (read)
          return {
            detection: read.detection,
            algorithm: CAIRN_SYNC_V2_NAME,
            keyId: key.kid,
            registered: registeredPoints(analysis.luma, analysis.width, analysis.height, read.geometry),
          };
      }
    }
    return { detection: null, algorithm: keys.length > 0 ? NEW_KEYED_ALGORITHM : this.keyless.name, keyId: null };
  }
}

/**
 * Runs one request and says which buffers the answer may hand over. Kept apart from the worker's message loop
 * so that it can be tested without threads. `pixelsOwned`: the request's pixels are the caller's to give up (a
 * worker's, which received them as a transfer or a copy), so an embed may write the mark into them.
 */
export function runImageTask(
  algorithms: ImageAlgorithms,
  request: WorkerRequest,
  { pixelsOwned = false }: { pixelsOwned?: boolean } = {},
): { response: WorkerResponse; transfer: ArrayBuffer[] } {
  try {
    if (request.op === 'embed') {
      const algorithm = algorithms.forEmbed(request.key, request.algorithm);
      // Every image mark measures its PSNR as it writes the samples, so it may mark the request's own buffer when
      // the caller no longer needs it (a worker's copy) instead of a copy compared with the original afterwards.
      const inPlace = { inPlace: pixelsOwned };
      const level = request.level === 'content' ? startLevelOfGrid : (request.level ?? 0);
      const {
        image: marked,
        content,
        psnrDb,
        level: embeddedAt,
      } = algorithm instanceof SyncTileWatermark
        ? algorithm.embedDescribed(request.image, request.payload, { ...inPlace, level })
        : { ...algorithm.embedMeasured(request.image, request.payload, inPlace), content: undefined, level: 0 };
      const outcome = {
        image: marked,
        psnrDb,
        algorithm: algorithm.name,
        keyId: request.key?.kid ?? null,
        ...(content ? { content } : {}),
        level: embeddedAt,
      };
      return { response: { id: request.id, ok: true, op: 'embed', outcome }, transfer: transferable(marked.pixels) };
    }
    const outcome = algorithms.detect(request.image, request.keys ?? [], request.syncGridAreas, {
      syncOnly: request.syncOnly === true,
    });
    return { response: { id: request.id, ok: true, op: 'detect', outcome }, transfer: [] };
  } catch (error) {
    const { name, message } = error instanceof Error ? error : new Error(String(error));
    return { response: { id: request.id, ok: false, error: { name, message } }, transfer: [] };
  }
}

/** The buffer behind `bytes` when handing it over loses nothing else (it is exactly that view). */
export function transferable(bytes: Uint8Array): ArrayBuffer[] {
  const buffer = bytes.buffer;
  return buffer instanceof ArrayBuffer && bytes.byteOffset === 0 && bytes.byteLength === buffer.byteLength
    ? [buffer]
    : [];
}
