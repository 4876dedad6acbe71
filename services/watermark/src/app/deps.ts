import { CairnError } from '@cairn/errors';
import type { Logger } from '@cairn/logging';
import type { MediaLimits } from '@cairn/media';
import { ImageRejectedError } from '../domain/image/raw-image.js';
import type { Keyring } from '../domain/keys.js';
import { PoolClosedError } from '../domain/worker-protocol.js';
import type { DetectionMemo } from './detection-memo.js';
import type { MarkRecords, MediaCodecs, WorkerPool } from './ports.js';

/** What the watermark use cases run over (service.ts builds them). */
export interface WatermarkDeps {
  readonly pool: WorkerPool;
  readonly codecs: MediaCodecs;
  readonly registry: MarkRecords;
  /** The current key signs new marks; all keys (current first) are tried by detection, then cairn-dct-v1. */
  readonly keyring: Keyring;
  /** Smallest image side the algorithms embed into. */
  readonly minEmbedSize: number;
  /** What the service decodes at most (MEDIA_MAX_*): callers send files, and it decodes them under these. */
  readonly mediaLimits: MediaLimits;
  /** What the image search read in Cairn's own signed files, for a verify of the same bytes (detect-image.ts). */
  readonly detections: DetectionMemo;
  readonly logger: Logger;
}

/** Under the 128 MiB gRPC message limit (packages/rpc), with room for the thumbnail and the other fields. */
export const MAX_ENCODED_ANSWER_BYTES = 120 * 1024 * 1024;

/** Worker failures as the caller should see them: its own bad image, a drain, or an internal error. */
export async function inWorker<T>(logger: Logger, what: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    // Refusals already phrased for the caller (the video pipeline probes and decodes inside its work).
    if (error instanceof CairnError) throw error;
    if (error instanceof ImageRejectedError) throw new CairnError('cairn.validation.invalid_body', error.message);
    if (error instanceof PoolClosedError)
      throw new CairnError('cairn.unavailable', 'The watermark service is shutting down; retry.');
    logger.error({ err: error }, `${what} failed`);
    throw new CairnError('cairn.internal_error', `${what} failed`, {}, { cause: error });
  }
}

/** A marked file bigger than an answer may carry is refused rather than cut off by the transport. */
export function checkAnswerSize(what: 'image' | 'audio' | 'video', bytes: number): void {
  if (bytes > MAX_ENCODED_ANSWER_BYTES) {
    throw new CairnError(
      'cairn.media.too_large',
      `The marked ${what} encodes to ${bytes} bytes, more than the ${MAX_ENCODED_ANSWER_BYTES} this service answers with.`,
    );
  }
}
