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
  /** The hashes of the frame's `FRAME_CROPS` (the indexed side only). */
  readonly crops?: ReadonlyArray<{ readonly name: string; readonly bits: Uint8Array; readonly quality: number }>;
}

export interface VideoFingerprintOptions {
  timeoutMs?: number;
  maxBytes?: number;
  maxSeconds?: number;
  /** Also hash each frame's `FRAME_CROPS` (what the index stores; a query hashes whole frames only). */
  crops?: boolean;
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

/**
 * Crop variants indexed with every frame (`frame-NN@seconds~name`): a copy cropped by a few per cent shows a
 * zoomed-in part of the frame, and a DCT hash of the whole frame moves as far as an unrelated picture's (measured on
 * camera-like clips made from the fixture photos: 54–90 bits after a central 10 % crop). The hash of the same part
 * of the indexed frame lands near the copy's whole-frame hash. Central 90 % and 80 % (5 % and 10 % off each side)
 * and 90 % anchored at each corner (a crop taken off two sides).
 */
export const FRAME_CROPS: ReadonlyArray<{ name: string; keep: number; ax: number; ay: number }> = [
  { name: 'c90', keep: 0.9, ax: 0.5, ay: 0.5 },
  { name: 'c80', keep: 0.8, ax: 0.5, ay: 0.5 },
  { name: 'tl90', keep: 0.9, ax: 0, ay: 0 },
  { name: 'tr90', keep: 0.9, ax: 1, ay: 0 },
  { name: 'bl90', keep: 0.9, ax: 0, ay: 1 },
  { name: 'br90', keep: 0.9, ax: 1, ay: 1 },
];

/** A region of a square rgb24 frame (`side`×`side`), copied out. */
export function cropFrame(
  pixels: Uint8Array,
  side: number,
  crop: { keep: number; ax: number; ay: number },
): { pixels: Uint8Array; width: number; height: number } {
  const size = Math.round(side * crop.keep);
  const left = Math.round((side - size) * crop.ax);
  const top = Math.round((side - size) * crop.ay);
  const out = new Uint8Array(size * size * 3);
  for (let y = 0; y < size; y++)
    out.set(pixels.subarray(((top + y) * side + left) * 3, ((top + y) * side + left + size) * 3), y * size * 3);
  return { pixels: out, width: size, height: size };
}

/** One indexed frame of an asset as the content check reads it back: its time, its whole and cropped hashes. */
export interface IndexedVideoFrame {
  readonly seconds: number;
  readonly quality: number;
  readonly hashes: readonly Uint8Array[];
}

/** The rows indexed for a video's frames: `frame-NN@seconds` (whole) and `frame-NN@seconds~crop` for its crops. */
export function frameRows(
  frames: readonly VideoFrameHash[],
): Array<{ variant: string; bits: Uint8Array; quality: number }> {
  return frames.flatMap((f, i) => {
    const variant = `frame-${String(i).padStart(2, '0')}@${f.seconds}`;
    return [
      { variant, bits: f.bits, quality: f.quality },
      ...(f.crops ?? []).map((c) => ({ variant: `${variant}~${c.name}`, bits: c.bits, quality: c.quality })),
    ];
  });
}

/** The stored variant name of a frame (`frame-NN@seconds`, crops `…~name`) → its frame key and seconds. */
export function parseFrameVariant(variant: string): { frame: string; seconds: number } | undefined {
  const m = /^(frame-\d+@(\d+(?:\.\d+)?))(?:~[a-z0-9]+)?$/.exec(variant);
  return m ? { frame: m[1]!, seconds: Number(m[2]) } : undefined;
}

/** An asset's indexed frames from its stored rows (whole frames and their crops, grouped by frame). */
export function indexedFrames(
  rows: ReadonlyArray<{ variant: string; bits: Uint8Array; quality: number }>,
): IndexedVideoFrame[] {
  const frames = new Map<string, { seconds: number; quality: number; hashes: Uint8Array[] }>();
  for (const row of rows) {
    const parsed = parseFrameVariant(row.variant);
    if (!parsed) continue;
    const frame = frames.get(parsed.frame) ?? { seconds: parsed.seconds, quality: 0, hashes: [] };
    frame.hashes.push(row.bits);
    // The whole frame's quality (a crop of a textured frame is as textured).
    if (!row.variant.includes('~') || frame.quality === 0) frame.quality = row.quality;
    frames.set(parsed.frame, frame);
  }
  return [...frames.values()].sort((a, b) => a.seconds - b.seconds);
}

/**
 * The content check samples the copy densely (`CONTENT_SAMPLE_FPS` frames a second, at most
 * `CONTENT_MAX_FRAMES` of them, over its first `CONTENT_MAX_SECONDS`), so that whatever the copy's frame rate,
 * encoder or scene-change decisions, some sampled frame lies within 1/(2·fps) s of each indexed frame. The index's
 * own sampling (scene changes and a periodic floor) picks different instants on a re-encoded copy of a moving shot,
 * and frames a fraction of a second apart in a handheld pan are as far apart as unrelated pictures.
 */
export const CONTENT_SAMPLE_FPS = 8;
export const CONTENT_MAX_SECONDS = 30;
export const CONTENT_MAX_FRAMES = CONTENT_SAMPLE_FPS * CONTENT_MAX_SECONDS;
/** Indexed frames within the copy's sampled span, plus this margin (a trailing frame of a clip), are compared. */
export const CONTENT_SPAN_MARGIN_SECONDS = 0.5;
/**
 * The vote: at least this fraction of the compared indexed frames, and at least `MIN_MATCHED_FRAMES` of them (all of
 * them when fewer were compared), each find a frame of the copy within `VIDEO_FRAME_RADIUS` of one of their hashes.
 * Measured in bench:watermark-video-content: honest copies match every compared frame; clips of other photos with
 * the same camera motion match none (nearest 98+ bits).
 */
export const CONTENT_MIN_FRACTION = 0.5;

export interface ContentComparison {
  /** Indexed frames (usable, within the copy's span) compared. */
  readonly compared: number;
  /** Of those, how many found a frame of the copy. */
  readonly matched: number;
  /** Undefined when nothing could be compared (no usable indexed frame within the copy's span). */
  readonly consistent: boolean | undefined;
}

/** Is the copy (densely sampled frames, spanning `spanSeconds`) the content of the asset whose frames are indexed? */
export function compareVideoContent(
  indexed: readonly IndexedVideoFrame[],
  copy: readonly VideoFrameHash[],
  spanSeconds: number,
  radius: number = VIDEO_FRAME_RADIUS,
): ContentComparison {
  const usableCopy = copy.filter((f) => f.quality >= MIN_FRAME_QUALITY);
  const compared = indexed.filter(
    (f) => f.quality >= MIN_FRAME_QUALITY && f.seconds <= spanSeconds + CONTENT_SPAN_MARGIN_SECONDS,
  );
  let matched = 0;
  for (const frame of compared) {
    const near = usableCopy.some((c) => frame.hashes.some((h) => hamming(c.bits, h) <= radius));
    if (near) matched++;
  }
  if (compared.length === 0 || usableCopy.length === 0)
    return { compared: compared.length, matched, consistent: undefined };
  const consistent =
    matched >= Math.min(MIN_MATCHED_FRAMES, compared.length) && matched / compared.length >= CONTENT_MIN_FRACTION;
  return { compared: compared.length, matched, consistent };
}
