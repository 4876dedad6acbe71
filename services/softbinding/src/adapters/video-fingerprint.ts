import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FfmpegError, runFfmpeg, sniffMediaType, type FfmpegRun } from '@cairn/media';
import { hashPixels } from '../domain/pdq.js';
import {
  CONTENT_MAX_FRAMES,
  CONTENT_MAX_SECONDS,
  CONTENT_SAMPLE_FPS,
  cropFrame,
  evenlySpaced,
  FRAME_CROPS,
  FRAME_BYTES,
  FRAME_SIDE,
  MAX_ANALYSED_SECONDS,
  MAX_PACKET_LIST_BYTES,
  MAX_CANDIDATE_FRAMES,
  MAX_VIDEO_BYTES,
  MAX_VIDEO_FRAMES,
  periodicSeconds,
  SCENE_THRESHOLD,
  streamExtent,
  VIDEO_TIMEOUT_MS,
  VideoFingerprintError,
  type VideoFingerprintOptions,
  type VideoFrameHash,
} from '../domain/video.js';

// The sampling rule and the matching rule are described in domain/video.ts; this module runs ffmpeg for them.

/** A path usable as a filter option value without filtergraph escaping (the temp dir's path: checked, not escaped). */
function filterPath(path: string): string {
  if (!/^[\w./-]+$/.test(path))
    throw new Error(`temp path ${JSON.stringify(path)} needs filtergraph escaping; set TMPDIR to a plain path`);
  return path;
}

function parseTimes(metadata: string): number[] {
  const times: number[] = [];
  for (const line of metadata.split('\n')) {
    const m = /^frame:\s*\d+\s+pts:\s*\S+\s+pts_time:\s*(\S+)/.exec(line);
    if (m) times.push(Number(m[1]));
  }
  return times;
}

/** One ffmpeg run over the video stream; its failures become the typed errors a caller can act on. */
async function runOnVideo(run: FfmpegRun): Promise<Buffer> {
  try {
    return await runFfmpeg(run);
  } catch (error) {
    if (!(error instanceof FfmpegError)) throw error;
    if (/took longer than/.test(error.message)) throw new VideoFingerprintError('timeout', 'video decoding timed out');
    if (/matches no streams/.test(error.stderr))
      throw new VideoFingerprintError('not_video', 'input has no video stream');
    throw new VideoFingerprintError('undecodable', `video could not be decoded: ${error.message}`);
  }
}

/**
 * The seconds the first video stream spans within its first `seconds`, from its packets' timestamps (demuxed and
 * checksummed, not decoded: one read of the file). Not the container's duration: that is the longest stream's, and
 * a clip whose sound runs past its frames declares seconds that hold no frames. Undefined when no packet has a
 * timestamp.
 */
async function videoStreamSeconds(input: string, seconds: number, timeoutMs: number): Promise<number | undefined> {
  const packets = await runOnVideo({
    args: ['-t', String(seconds), '-i', input, '-map', '0:v:0', '-c', 'copy', '-f', 'framecrc', 'pipe:1'],
    maxOutputBytes: MAX_PACKET_LIST_BYTES,
    timeoutMs,
  });
  return streamExtent(packets.toString('latin1'));
}

/** Decoded 128×128 rgb24 frames of a video and their seconds from the first one. */
interface DecodedFrames {
  readonly raw: Buffer;
  readonly times: number[];
  readonly count: number;
}

/** Checks the input before any decoder runs (size, not another type). */
function checkInput(bytes: Buffer, maxBytes: number): void {
  if (bytes.length > maxBytes)
    throw new VideoFingerprintError(
      'too_large',
      `video is ${bytes.length} bytes; at most ${maxBytes} are fingerprinted`,
    );
  if (bytes.length === 0) throw new VideoFingerprintError('not_video', 'empty input');
  const sniffed = sniffMediaType(bytes.subarray(0, 64));
  if (sniffed && sniffed.modality !== 'video')
    throw new VideoFingerprintError('not_video', `input is ${sniffed.mediaType}, not a video`);
}

/**
 * One decode of the first video stream's first `seconds`, scaled to the hash's square and passed through `pick` (a
 * frame selection filter), at most `maxFrames` frames, each with its timestamp.
 */
async function decodeFrames(
  input: string,
  dir: string,
  pick: string,
  seconds: number,
  maxFrames: number,
  deadline: number,
  everySeconds?: number,
): Promise<DecodedFrames> {
  const metaFile = join(dir, 'frames.txt');
  const filter = [
    `scale=${FRAME_SIDE}:${FRAME_SIDE}:flags=area`,
    pick,
    `metadata=mode=print:file=${filterPath(metaFile)}`,
    'format=rgb24',
  ].join(',');
  const raw = await runOnVideo({
    args: [
      '-t',
      String(seconds),
      '-i',
      input,
      '-map',
      '0:v:0',
      '-an',
      '-sn',
      '-dn',
      '-vf',
      filter,
      '-vsync',
      'vfr',
      '-frames:v',
      String(maxFrames),
      '-f',
      'rawvideo',
      'pipe:1',
    ],
    maxOutputBytes: maxFrames * FRAME_BYTES + FRAME_BYTES,
    timeoutMs: Math.max(1, deadline - Date.now()),
  });
  const frames = Math.floor(raw.length / FRAME_BYTES);
  // The metadata filter prints only frames that carry metadata (select's scene score); frames picked at a fixed
  // rate carry none, and are that rate's steps apart.
  const times =
    everySeconds === undefined
      ? parseTimes(await readFile(metaFile, 'utf8').catch(() => ''))
      : Array.from({ length: frames }, (_, i) => i * everySeconds);
  const count = Math.min(frames, times.length);
  if (count === 0) throw new VideoFingerprintError('no_frames', 'no video frames could be decoded');
  return { raw, times, count };
}

/** Frame `i` of the decoded frames, hashed (whole, and its crops when asked), with its seconds from the first. */
function hashFrame(frames: DecodedFrames, i: number, withCrops: boolean): VideoFrameHash {
  const pixels = new Uint8Array(frames.raw.buffer, frames.raw.byteOffset + i * FRAME_BYTES, FRAME_BYTES);
  const hash = hashPixels(pixels, FRAME_SIDE, FRAME_SIDE, 3);
  const t0 = frames.times[0]!;
  const ti = frames.times[i]!;
  const seconds = Number.isFinite(ti) && Number.isFinite(t0) ? Math.round((ti - t0) * 1000) / 1000 : 0;
  if (!withCrops) return { seconds, bits: hash.bits, quality: hash.quality };
  const crops = FRAME_CROPS.map((crop) => {
    const part = cropFrame(pixels, FRAME_SIDE, crop);
    const h = hashPixels(part.pixels, part.width, part.height, 3);
    return { name: crop.name, bits: h.bits, quality: h.quality };
  });
  return { seconds, bits: hash.bits, quality: hash.quality, crops };
}

/** Runs `work` on the input written to a temp file (MP4s with the `moov` atom at the end decode from a file). */
async function withInputFile<T>(bytes: Buffer, work: (input: string, dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'cairn-video-'));
  try {
    const input = join(dir, 'input');
    await writeFile(input, bytes);
    return await work(input, dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * The frame hashes of a video (see the module comment), with their crop variants (`FRAME_CROPS`) when
 * `options.crops`; a typed `VideoFingerprintError` for bad input.
 */
export async function fingerprintVideo(
  bytes: Buffer,
  options: VideoFingerprintOptions = {},
): Promise<VideoFrameHash[]> {
  checkInput(bytes, options.maxBytes ?? MAX_VIDEO_BYTES);
  return withInputFile(bytes, async (input, dir) => {
    const seconds = options.maxSeconds ?? MAX_ANALYSED_SECONDS;
    const deadline = Date.now() + (options.timeoutMs ?? VIDEO_TIMEOUT_MS);
    const floor = periodicSeconds(await videoStreamSeconds(input, seconds, deadline - Date.now()));
    const pick = `select='eq(n\\,0)+gt(scene\\,${SCENE_THRESHOLD})+gte(t-prev_selected_t\\,${floor})'`;
    const frames = await decodeFrames(input, dir, pick, seconds, MAX_CANDIDATE_FRAMES, deadline);
    return evenlySpaced(
      Array.from({ length: frames.count }, (_, k) => k),
      MAX_VIDEO_FRAMES,
    ).map((i) => hashFrame(frames, i, options.crops ?? false));
  });
}

/**
 * The copy's side of the content check (domain/video.ts `compareVideoContent`): frames sampled evenly at
 * `CONTENT_SAMPLE_FPS` over the first `CONTENT_MAX_SECONDS`, whole-frame hashes, and the seconds they span.
 */
export async function sampleVideo(
  bytes: Buffer,
  options: VideoFingerprintOptions = {},
): Promise<{ frames: VideoFrameHash[]; spanSeconds: number }> {
  checkInput(bytes, options.maxBytes ?? MAX_VIDEO_BYTES);
  return withInputFile(bytes, async (input, dir) => {
    const seconds = Math.min(options.maxSeconds ?? CONTENT_MAX_SECONDS, CONTENT_MAX_SECONDS);
    const deadline = Date.now() + (options.timeoutMs ?? VIDEO_TIMEOUT_MS);
    const decoded = await decodeFrames(
      input,
      dir,
      `fps=${CONTENT_SAMPLE_FPS}`,
      seconds,
      CONTENT_MAX_FRAMES,
      deadline,
      1 / CONTENT_SAMPLE_FPS,
    );
    const frames = Array.from({ length: decoded.count }, (_, i) => hashFrame(decoded, i, false));
    // The last sample stands for the 1/fps seconds after it.
    const spanSeconds = (frames.at(-1)?.seconds ?? 0) + 1 / CONTENT_SAMPLE_FPS;
    return { frames, spanSeconds };
  });
}
