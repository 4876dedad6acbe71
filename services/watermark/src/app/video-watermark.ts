import type { MediaLimits } from '@cairn/media';
import type { Detection } from '../domain/image/algorithm.js';
import type { RawImage } from '../domain/image/raw-image.js';
import type { WatermarkKey } from '../domain/keys.js';
import type { MediaCodecs, WorkerPool } from './ports.js';
import type { DetectOutcome } from '../domain/worker-protocol.js';
import { detectionSampleFps, VIDEO_GRID_AREAS } from '../domain/video/luma-frame-mark.js';
import { MIN_VIDEO_SIDE } from '../domain/media-formats.js';
import { addLuma, lumaSum, meanLuma } from '../domain/video/luma-mean.js';
import { describeVideoContent } from '../domain/video/content.js';

/**
 * The video watermark: every frame carries the image mark cairn-sync-v2 (the keyed tile with the payload, made
 * once per video in the worker; per frame only the perceptual mask and the addition), and detection reads frames
 * averaged over one-second windows. Luma RMS 2.2 levels (PSNR ≈ 41 dB): above the image's 1.85 because a video is
 * re-encoded once more when signed and usually again after, and averaging does not help against quantisation of
 * a still scene; below the 40 dB the issue allows.
 */
export const VIDEO_MARK_STRENGTH_RMS = 2.2;
/** Detection reads windows of the first seconds only: any excerpt of at least a window holds the whole mark. */
const DETECT_SECONDS = 12;

export interface VideoMarkDeps {
  readonly pool: WorkerPool;
  readonly codecs: MediaCodecs;
  readonly mediaLimits: MediaLimits;
}

/** How far a video's marking is: frames the encoder took, of those the probe expects (duration × frame rate). */
export interface VideoMarkProgress {
  readonly framesMarked: number;
  readonly framesExpected: number;
}

export interface MarkedVideo {
  readonly encoded: Buffer;
  readonly mediaType: string;
  readonly width: number;
  readonly height: number;
  readonly frames: number;
  readonly crf: number;
  readonly psnrDb: number;
  /** The coarse luma map of the first second on the embedding grid, for the registry (domain/video/content.ts). */
  readonly content: Uint8Array;
}

/**
 * Decodes the upload, marks every frame's luma with the tile of `payload` under `key`, and re-encodes like the
 * upload (H.264/MP4 or VP9/WebM, same size and frame rate, audio copied) at the CRF measured to keep its bit rate.
 */
export async function markVideo(
  { pool, codecs, mediaLimits }: VideoMarkDeps,
  encoded: Uint8Array,
  payload: Uint8Array,
  key: WatermarkKey,
  hooks: {
    /** After the upload is probed and accepted, before any frame is marked (the registry records the mark here). */
    readonly accepted?: () => Promise<void>;
    /** After each frame the encoder took: how many so far, of the frames the probe expects. */
    readonly onProgress?: (progress: VideoMarkProgress) => void;
  } = {},
): Promise<MarkedVideo> {
  const { accepted, onProgress } = hooks;
  const file = await codecs.writeVideo(encoded);
  let crf: Promise<number> | undefined;
  try {
    const format = await codecs.probeVideoForEmbedding(encoded, file, mediaLimits);
    await accepted?.();
    // Measured while the first frames are decoded and marked (the encoder waits for it).
    crf = codecs.measureCrf(file, format);
    const lumaBytes = format.width * format.height;
    let squaredError = 0;
    const expectedFrames = Math.max(1, Math.round(format.seconds * format.fps));
    // The first second's luma, summed as its frames go by (before the worker takes them): the content description.
    const firstSecond = { sum: lumaSum(lumaBytes), frames: 0, of: Math.max(1, Math.round(format.fps)) };
    const { encoded: marked, frames } = await codecs.transcodeFrames(
      file,
      format,
      crf,
      async (frame) => {
        if (firstSecond.frames < firstSecond.of) {
          addLuma(firstSecond.sum, frame);
          firstSecond.frames++;
        }
        const outcome = await pool.markLuma(frame, format, payload, key, VIDEO_MARK_STRENGTH_RMS);
        squaredError += outcome.squaredError;
        return outcome.frame;
      },
      {
        // About real time on two idle cores; a shared, loaded machine was measured 20× slower (load 16 on 2 cores),
        // so the bound is generous and only catches a stuck pipeline.
        timeoutMs: 120_000 + format.seconds * 30_000,
        maxSeconds: mediaLimits.videoSeconds,
        // Two frames per worker: each has the next frame waiting when it answers, so every core marks while the
        // encoder takes the frames in order.
        inFlight: 2 * pool.size,
        onProgress: onProgress ? (n) => onProgress({ framesMarked: n, framesExpected: expectedFrames }) : undefined,
      },
    );
    const mse = squaredError / (frames * lumaBytes);
    return {
      encoded: marked,
      mediaType: format.mediaType,
      width: format.width,
      height: format.height,
      frames,
      crf: await crf,
      psnrDb: mse > 0 ? 10 * Math.log10((255 * 255) / mse) : 99,
      content: describeVideoContent(meanLuma(firstSecond.sum, firstSecond.frames), format.width, format.height),
    };
  } finally {
    // A failed transcode leaves no probe reading the file after it is gone (the probe's own failure is not the news).
    await crf?.catch(() => undefined);
    await file.remove();
  }
}

export interface VideoDetection {
  readonly applicable: boolean;
  readonly outcome?: DetectOutcome & { readonly detection: Detection };
  readonly atSeconds?: number;
  /** The algorithm tried when nothing was found. */
  readonly algorithm?: string;
}

/**
 * Reads a video's mark: the first DETECT_SECONDS in one-second windows of averaged luma. Every frame carries the
 * same mark at the same place while the picture moves, so the windows are averaged as they come and the mean of all
 * so far is what the image detector decides on (every key, cairn-sync-v2 on each grid area a video mark may use):
 * evidence a re-encode left too faint in one second adds up over the next ones. Decisions after 1, 2, 3, 6 and 12
 * windows (and after the last of a shorter video): the first that reads ends the search. Each decision is a few
 * more chances for the 32-bit check: five decisions × three areas at most, so an unmarked video costs fifteen
 * analyses (twelve single windows on one area did, before the windows were integrated).
 */
export async function detectVideoMark(
  { pool, codecs }: VideoMarkDeps,
  encoded: Uint8Array,
  keys: ReadonlyArray<WatermarkKey>,
): Promise<VideoDetection> {
  const file = await codecs.writeVideo(encoded);
  try {
    let found: VideoDetection | undefined;
    let algorithm: string | undefined;
    let windows = 0;
    let decided = 0;
    let sum: { values: Uint32Array; width: number; height: number } | undefined;
    const decide = async (atSeconds: number): Promise<boolean> => {
      const { values, width, height } = sum!;
      decided = windows;
      const image: RawImage = { pixels: meanLuma(values, windows), width, height, channels: 1 };
      const outcome = await pool.detect(image, keys, VIDEO_GRID_AREAS);
      algorithm = outcome.algorithm;
      if (!outcome.detection) return false;
      found = { applicable: true, outcome: { ...outcome, detection: outcome.detection }, atSeconds };
      return true;
    };
    let lastSeconds = 0;
    const visited = await codecs.visitLumaWindows(
      file,
      { maxSeconds: DETECT_SECONDS, sampleFps: detectionSampleFps, timeoutMs: 60_000 },
      async ({ luma, width, height, atSeconds }) => {
        if (Math.min(width, height) < MIN_DETECT_SIDE) return false;
        windows++;
        lastSeconds = atSeconds;
        sum ??= { values: lumaSum(luma.length), width, height };
        addLuma(sum.values, luma);
        return !(DECISION_WINDOWS.has(windows) && (await decide(atSeconds)));
      },
    );
    if (!found && windows > decided) await decide(lastSeconds);
    if (found) return found;
    return visited === 'visited' && windows > 0 ? { applicable: true, algorithm } : { applicable: false };
  } finally {
    await file.remove();
  }
}

/** After how many windows the mean so far is decided on (a 2 s excerpt is decided after one and after two). */
const DECISION_WINDOWS: ReadonlySet<number> = new Set([1, 2, 3, 6, 12]);

/** Frames smaller than this on a side are not looked at (v2's own floor for images is 96). */
const MIN_DETECT_SIDE = Math.min(96, MIN_VIDEO_SIDE);
