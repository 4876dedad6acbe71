import type { RawImage } from './image/raw-image.js';

/** Messages between the pool (main thread) and src/worker.ts. Pixel buffers travel as transfers, not copies. */
export type WorkerRequest =
  | { readonly id: number; readonly op: 'embed'; readonly image: RawImage; readonly payload: Uint8Array }
  | { readonly id: number; readonly op: 'detect'; readonly image: RawImage };

export interface EmbedOutcome {
  readonly image: RawImage;
  readonly psnrDb: number;
  readonly algorithm: string;
}

export interface DetectOutcome {
  readonly detection: { readonly payload: Uint8Array; readonly confidence: number } | null;
  readonly algorithm: string;
}

export type WorkerResponse =
  | { readonly id: number; readonly ok: true; readonly op: 'embed'; readonly outcome: EmbedOutcome }
  | { readonly id: number; readonly ok: true; readonly op: 'detect'; readonly outcome: DetectOutcome }
  | { readonly id: number; readonly ok: false; readonly error: { readonly name: string; readonly message: string } };

/** Sent once by a worker when its modules have loaded. */
export const WORKER_READY = 'cairn-watermark-worker-ready';
