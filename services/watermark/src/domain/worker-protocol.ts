import type { KeyedImageWatermarkAlg } from '@cairn/catalog';
import type { PcmAudio } from './audio/apply.js';
import type { CAIRN_AUDIO_WM_V1_NAME } from './audio/cairn-audio-wm-v1.js';
import type { CAIRN_AUDIO_WM_V3_NAME } from './audio/cairn-audio-wm-v3.js';
import type { RegisteredPoints } from './image/content-registration.js';
import type { RawImage } from './image/raw-image.js';
import type { WatermarkKey } from './keys.js';

/** The audio marks a worker writes: v3 for new marks, v1 again for an id recorded with it. */
export type AudioMarkAlgorithm = typeof CAIRN_AUDIO_WM_V3_NAME | typeof CAIRN_AUDIO_WM_V1_NAME;

/** The image algorithms that run under a key (@cairn/catalog). */
export type KeyedAlgorithmName = KeyedImageWatermarkAlg;

/** Messages between the pool (main thread) and src/adapters/worker.ts. Pixel buffers travel as transfers, not copies. */
export type WorkerRequest =
  // Without a key, the keyless cairn-dct-v1; with one, `algorithm` under it (cairn-dct-keyed-v1 when not named,
  // so a caller that predates cairn-sync-v2 keeps writing what it records).
  | {
      readonly id: number;
      readonly op: 'embed';
      readonly image: RawImage;
      readonly payload: Uint8Array;
      readonly key?: WatermarkKey;
      readonly algorithm?: KeyedAlgorithmName;
      /**
       * cairn-sync-v2: the strength level (SYNC_STRENGTH_LEVELS), or `content` for the level the content starts at
       * (domain/image/readback.ts, startLevel), chosen from the embedding's own luma grid.
       */
      readonly level?: number | 'content';
    }
  // cairn-dct-keyed-v1 under each key, then cairn-dct-v1, then cairn-sync-v2 under each key in order, on each of
  // `syncGridAreas` (the embedding grid areas to try; an image's only, when not named: video frames may be coarser).
  | {
      readonly id: number;
      readonly op: 'detect';
      readonly image: RawImage;
      readonly keys?: ReadonlyArray<WatermarkKey>;
      readonly syncGridAreas?: ReadonlyArray<number>;
      /** Only cairn-sync-v2 is tried (the read-back of a mark it just wrote: a v1 mark is not what it looks for). */
      readonly syncOnly?: boolean;
    };

export interface EmbedOutcome {
  readonly image: RawImage;
  readonly psnrDb: number;
  readonly algorithm: string;
  /** The key's id; null for the keyless algorithm. */
  readonly keyId: string | null;
  /** cairn-sync-v2: the coarse luma map of what was marked, for the registry (content-registration.ts). */
  readonly content?: Uint8Array;
  /** cairn-sync-v2: the strength level the mark was embedded at. */
  readonly level?: number;
}

export interface DetectOutcome {
  readonly detection: { readonly payload: Uint8Array; readonly confidence: number } | null;
  /** The algorithm that decoded the mark (with nothing found: the first one tried). */
  readonly algorithm: string;
  /** The key that decoded it; null when keyless or nothing was found. */
  readonly keyId: string | null;
  /** cairn-sync-v2: the received picture placed on the embedding grid, to compare with the asset's content. */
  readonly registered?: RegisteredPoints;
}

export type WorkerResponse =
  | { readonly id: number; readonly ok: true; readonly op: 'embed'; readonly outcome: EmbedOutcome }
  | { readonly id: number; readonly ok: true; readonly op: 'detect'; readonly outcome: DetectOutcome }
  | { readonly id: number; readonly ok: false; readonly error: { readonly name: string; readonly message: string } };

/** Sent once by a worker when its modules have loaded. */
export const WORKER_READY = 'cairn-watermark-worker-ready';

/** Audio work (cairn-audio-wm-v3 and v1, always keyed): sample buffers travel as transfers, like pixels. */
export type AudioWorkerRequest =
  | {
      readonly id: number;
      readonly op: 'embed-audio';
      readonly audio: PcmAudio;
      readonly payload: Uint8Array;
      readonly key: WatermarkKey;
      readonly algorithm: AudioMarkAlgorithm;
    }
  // Every key in order; the 16 kHz mono mix is analysed once for all of them.
  | {
      readonly id: number;
      readonly op: 'detect-audio';
      readonly samples: Float32Array;
      readonly keys: ReadonlyArray<WatermarkKey>;
    };

export interface AudioEmbedOutcome {
  /** The marked samples, interleaved as they came. */
  readonly samples: Float32Array;
  /** SNR of the mark against the upload (all channels, full band), dB. */
  readonly snrDb: number;
  readonly algorithm: string;
  readonly keyId: string;
}

export type AudioWorkerResponse =
  | { readonly id: number; readonly ok: true; readonly op: 'embed-audio'; readonly outcome: AudioEmbedOutcome }
  | { readonly id: number; readonly ok: true; readonly op: 'detect-audio'; readonly outcome: DetectOutcome }
  | { readonly id: number; readonly ok: false; readonly error: { readonly name: string; readonly message: string } };

export function isAudioRequest(
  request: WorkerRequest | AudioWorkerRequest | VideoWorkerRequest,
): request is AudioWorkerRequest {
  return request.op === 'embed-audio' || request.op === 'detect-audio';
}

/**
 * Video work: one frame's 8-bit luma plane marked with the cairn-sync-v2 tile of `payload` under `key` (the worker
 * makes the tile and the frame-size constants once per video and reuses them). The buffer travels as a transfer
 * and comes back marked; bytes after width × height (the chroma planes) are returned untouched.
 */
export interface VideoWorkerRequest {
  readonly id: number;
  readonly op: 'mark-luma';
  readonly frame: Uint8Array;
  readonly width: number;
  readonly height: number;
  readonly payload: Uint8Array;
  readonly key: WatermarkKey;
  readonly strengthRms: number;
}

export interface MarkLumaOutcome {
  readonly frame: Uint8Array;
  /** Sum of squared luma changes (levels²), for the PSNR of the whole video. */
  readonly squaredError: number;
}

export type VideoWorkerResponse =
  | { readonly id: number; readonly ok: true; readonly op: 'mark-luma'; readonly outcome: MarkLumaOutcome }
  | { readonly id: number; readonly ok: false; readonly error: { readonly name: string; readonly message: string } };

export function isVideoRequest(
  request: WorkerRequest | AudioWorkerRequest | VideoWorkerRequest,
): request is VideoWorkerRequest {
  return request.op === 'mark-luma';
}

/** The pool no longer takes work (the service is draining): what a task the pool will not run fails with. */
export class PoolClosedError extends Error {
  constructor() {
    super('the image worker pool is shutting down');
    this.name = 'PoolClosedError';
  }
}
