import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FfmpegError, runFfmpeg, sniffMediaType, type FfmpegRun } from '@cairn/media';
import { hashPixels } from '../domain/pdq.js';
import {
  evenlySpaced,
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

/** The frame hashes of a video (see the module comment); a typed `VideoFingerprintError` for bad input. */
export async function fingerprintVideo(
  bytes: Buffer,
  options: VideoFingerprintOptions = {},
): Promise<VideoFrameHash[]> {
  const maxBytes = options.maxBytes ?? MAX_VIDEO_BYTES;
  if (bytes.length > maxBytes)
    throw new VideoFingerprintError(
      'too_large',
      `video is ${bytes.length} bytes; at most ${maxBytes} are fingerprinted`,
    );
  if (bytes.length === 0) throw new VideoFingerprintError('not_video', 'empty input');
  const sniffed = sniffMediaType(bytes.subarray(0, 64));
  if (sniffed && sniffed.modality !== 'video')
    throw new VideoFingerprintError('not_video', `input is ${sniffed.mediaType}, not a video`);

  const dir = await mkdtemp(join(tmpdir(), 'cairn-video-'));
  try {
    const input = join(dir, 'input');
    const metaFile = join(dir, 'frames.txt');
    await writeFile(input, bytes);
    const seconds = options.maxSeconds ?? MAX_ANALYSED_SECONDS;
    const deadline = Date.now() + (options.timeoutMs ?? VIDEO_TIMEOUT_MS);
    const floor = periodicSeconds(await videoStreamSeconds(input, seconds, deadline - Date.now()));
    const filter = [
      `scale=${FRAME_SIDE}:${FRAME_SIDE}:flags=area`,
      `select='eq(n\\,0)+gt(scene\\,${SCENE_THRESHOLD})+gte(t-prev_selected_t\\,${floor})'`,
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
        String(MAX_CANDIDATE_FRAMES),
        '-f',
        'rawvideo',
        'pipe:1',
      ],
      maxOutputBytes: MAX_CANDIDATE_FRAMES * FRAME_BYTES + FRAME_BYTES,
      timeoutMs: Math.max(1, deadline - Date.now()),
    });
    const times = parseTimes(await readFile(metaFile, 'utf8').catch(() => ''));
    const count = Math.min(Math.floor(raw.length / FRAME_BYTES), times.length);
    if (count === 0) throw new VideoFingerprintError('no_frames', 'no video frames could be decoded');
    const t0 = times[0]!;
    const frames: VideoFrameHash[] = [];
    for (const i of evenlySpaced(
      Array.from({ length: count }, (_, k) => k),
      MAX_VIDEO_FRAMES,
    )) {
      const pixels = new Uint8Array(raw.buffer, raw.byteOffset + i * FRAME_BYTES, FRAME_BYTES);
      const hash = hashPixels(pixels, FRAME_SIDE, FRAME_SIDE, 3);
      const t = Number.isFinite(times[i]!) && Number.isFinite(t0) ? Math.round((times[i]! - t0) * 1000) / 1000 : 0;
      frames.push({ seconds: t, bits: hash.bits, quality: hash.quality });
    }
    return frames;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
