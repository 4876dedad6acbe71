import { FINGERPRINT_ALG } from '@cairn/catalog';
import { hamming, HASH_BYTES } from './pdq.js';

/**
 * Video fingerprint `cairn.pdq-frames.v1`: PDQ-class hashes (`pdq.ts`, the image module) of frames sampled at
 * scene changes, with a periodic floor, each with its timestamp.
 *
 * Sampling (adapters/video-fingerprint.ts: one ffmpeg decode, the input written to a temp file so MP4s with the
 * `moov` atom at the end decode):
 *  - the first `MAX_ANALYSED_SECONDS` of the first video stream are decoded (`-t`), audio/subtitles ignored;
 *  - every frame is scaled to 128×128 (area filter, aspect ignored: the image path also fills a 128×128 working
 *    square, so a frame hashes like the same still would, and the hash does not depend on resolution);
 *  - `select='eq(n,0) + gt(scene, 0.3) + gte(t - prev_selected_t, 4)'`: the first frame, every frame whose
 *    scene-change score exceeds `SCENE_THRESHOLD` (ffmpeg's normalised SAD against the previous frame; 0.3 is
 *    the customary cut threshold), and a floor of one frame whenever `PERIODIC_SECONDS` passed since the last
 *    selected one (so a static shot or a slow pan still yields a frame every 4 s); shorter videos get a shorter
 *    floor, `periodicSeconds(duration)`: a quarter of the duration, at least `MIN_PERIODIC_SECONDS`, so a clip
 *    of a few seconds without cuts still yields several frames (with one frame it could never reach
 *    `MIN_MATCHED_FRAMES`, and a re-encoded copy of a 3 s clip found nothing). The duration is the video
 *    stream's own extent (`streamExtent`: its packets' timestamps, read by a demux-only ffmpeg pass before the
 *    decode), not the container's: a container declares its longest stream's end, and a 4 s clip with 20 s of
 *    AAC (fragmented MP4 or not) got a 4 s floor, one frame, and its copies found nothing;
 *  - `-vsync vfr` (selected frames only, no duplicates), rawvideo rgb24 on stdout, at most `MAX_CANDIDATE_FRAMES`;
 *  - timestamps: the `metadata=mode=print:file=…` filter after `select` writes one `pts_time` line per selected
 *    frame to a file in the same temp dir (stderr is not returned by `runFfmpeg`); `seconds` is relative to the
 *    first decoded frame's timestamp, rounded to milliseconds;
 *  - when more than `MAX_VIDEO_FRAMES` frames were selected, an evenly spaced subset (by index) of that many is
 *    kept, first and last included. A consequence: for long videos (> ~3 min without cuts, or many cuts) the
 *    indexed frames thin out and a short clip of them may find too few frames within the radius.
 * Each frame: `hashPixels` from pdq.ts → 256 bits + quality (0–100, gradient-based; black or flat frames ≈ 0).
 *
 * Matching (`matchVideo`): a query frame matches when some indexed frame is within `VIDEO_FRAME_RADIUS` bits;
 * frames below `MIN_FRAME_QUALITY` (on either side) are ignored — a black frame matches every other black frame.
 * A video matches when at least `MIN_MATCHED_FRAMES` query frames match and they are at least
 * `MIN_MATCHED_FRACTION` of the usable query frames (README / test/video.test.ts for the distributions).
 */
export const VIDEO_ALG = FINGERPRINT_ALG.video;
export const SCENE_THRESHOLD = 0.3;
export const PERIODIC_SECONDS = 4;
export const MIN_PERIODIC_SECONDS = 0.5;

/** The periodic floor for a video of `duration` seconds (unknown: the long-video floor). */
export function periodicSeconds(duration: number | undefined): number {
  if (duration === undefined || !Number.isFinite(duration) || duration <= 0) return PERIODIC_SECONDS;
  return Math.min(PERIODIC_SECONDS, Math.max(MIN_PERIODIC_SECONDS, Math.round((duration / 4) * 100) / 100));
}
/**
 * The extent in seconds of the packets listed by ffmpeg's `framecrc` muxer (`#tb 0: num/den` header, then one
 * `stream, dts, pts, duration, size, checksum` line per packet): from the earliest presentation time to the latest
 * one's end (B-frames present out of order). Undefined when there is no time base or no packet.
 */
export function streamExtent(framecrc: string): number | undefined {
  const tb = /^#tb \d+: (\d+)\/(\d+)$/m.exec(framecrc);
  if (!tb || Number(tb[2]) === 0) return undefined;
  let first = Infinity;
  let end = -Infinity;
  for (const line of framecrc.split('\n')) {
    if (line.startsWith('#')) continue;
    const fields = line.split(',');
    if (fields.length < 4) continue;
    const pts = Number(fields[2]);
    const duration = Number(fields[3]);
    // A packet without a timestamp is listed with AV_NOPTS_VALUE (−2⁶³): not a time.
    if (!Number.isSafeInteger(pts) || !Number.isSafeInteger(duration)) continue;
    if (pts < first) first = pts;
    if (pts + duration > end) end = pts + duration;
  }
  if (end <= first) return undefined;
  return ((end - first) * Number(tb[1])) / Number(tb[2]);
}

/** The packet list of `streamExtent` is read whole: ~65 bytes a packet, 16 MiB ≈ 250k packets (10 min at 400 fps). */
export const MAX_PACKET_LIST_BYTES = 16 * 1024 * 1024;
export const MAX_VIDEO_FRAMES = 48;
/** Frames taken from ffmpeg before thinning (rgb24 128×128 = 48 KiB each: at most 12 MiB of output). */
export const MAX_CANDIDATE_FRAMES = 256;
export const MAX_ANALYSED_SECONDS = 600;
export const MAX_VIDEO_BYTES = 512 * 1024 * 1024;
export const VIDEO_TIMEOUT_MS = 120_000;
/** Frames are scaled to the image hash's working square (domain/pdq.ts WORK_SIDE), as rgb24. */
export const FRAME_SIDE = 128;
export const FRAME_BYTES = FRAME_SIDE * FRAME_SIDE * 3;

/**
 * Hamming radius (of 256) for two frames to be the same picture. Measured (test/video.test.ts, 4 slideshows × 5
 * transforms, 105 frames): frames of transformed copies lie ≤ 12 from their nearest indexed frame after CRF 35,
 * VP8 WebM, MKV remux or a 1 s trim, and ≤ 28 after a 50% scale (brick texture 28, a page of text 24, photos
 * ≤ 20); frames of different videos lie 110–130 away unless both show the same photo (then 0–2). The image
 * module's radius (threshold.ts), which sits in that gap.
 */
export const VIDEO_FRAME_RADIUS = 31;
/** Frames below this quality are ignored by matching (black/blank frames: 0; the photo frames measured 37–100). */
export const MIN_FRAME_QUALITY = 20;
/**
 * Measured: every transformed copy matched 100% of its frames; a different video that shares one shot (one photo
 * of five) matched 1 frame, 17–20% of its frames. 30% and 2 frames sit between; 2 frames also keeps a one-frame
 * query (a single shot shorter than `PERIODIC_SECONDS`) from matching on a single picture — such a clip cannot
 * match at all, a deliberate limitation (an image lookup is the better tool for one picture).
 */
export const MIN_MATCHED_FRAMES = 2;
export const MIN_MATCHED_FRACTION = 0.3;

export interface VideoFrameHash {
  /** Seconds from the first decoded frame. */
  readonly seconds: number;
  /** 32 bytes, most significant bit first (as `PerceptualHash.bits`). */
  readonly bits: Uint8Array;
  /** 0..100. */
  readonly quality: number;
}

export interface VideoFingerprintOptions {
  timeoutMs?: number;
  maxBytes?: number;
  maxSeconds?: number;
}

export type VideoFingerprintErrorCode = 'too_large' | 'not_video' | 'undecodable' | 'timeout' | 'no_frames';

/** A video that cannot be fingerprinted; `code` maps to a client-facing message. */
export class VideoFingerprintError extends Error {
  constructor(
    readonly code: VideoFingerprintErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'VideoFingerprintError';
  }
}

/** `count` items of `items`, evenly spaced by index, first and last included. */
export function evenlySpaced<T>(items: T[], count: number): T[] {
  if (items.length <= count) return items;
  const out: T[] = [];
  for (let i = 0; i < count; i++) out.push(items[Math.round((i * (items.length - 1)) / (count - 1))]!);
  return out;
}

export interface VideoMatch {
  /** Usable query frames within the radius of some usable indexed frame. */
  readonly matchedFrames: number;
  /** matchedFrames / usable query frames (0 when there are none). */
  readonly similarity: number;
  /** The rule: matchedFrames ≥ MIN_MATCHED_FRAMES and similarity ≥ MIN_MATCHED_FRACTION. */
  readonly matches: boolean;
}

/** The distance from `frame` to the nearest usable frame of `indexed` (HASH_BITS + 1 when there is none). */
export function nearestFrameDistance(frame: VideoFrameHash, indexed: readonly VideoFrameHash[]): number {
  let best = HASH_BYTES * 8 + 1;
  for (const f of indexed) {
    if (f.quality < MIN_FRAME_QUALITY) continue;
    const d = hamming(frame.bits, f.bits);
    if (d < best) best = d;
  }
  return best;
}

/** How much of the query video is found in the indexed one (see the module comment for the rule). */
export function matchVideo(
  query: readonly VideoFrameHash[],
  indexed: readonly VideoFrameHash[],
  radius: number = VIDEO_FRAME_RADIUS,
): VideoMatch {
  let usable = 0;
  let matchedFrames = 0;
  for (const frame of query) {
    if (frame.quality < MIN_FRAME_QUALITY) continue;
    usable++;
    if (nearestFrameDistance(frame, indexed) <= radius) matchedFrames++;
  }
  const similarity = usable === 0 ? 0 : Math.round((matchedFrames / usable) * 1000) / 1000;
  return {
    matchedFrames,
    similarity,
    matches: matchedFrames >= MIN_MATCHED_FRAMES && similarity >= MIN_MATCHED_FRACTION,
  };
}
