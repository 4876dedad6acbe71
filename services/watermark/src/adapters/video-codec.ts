import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { CairnError } from '@cairn/errors';
import { ffmpegPath, FfmpegError, probeFfmpeg, runFfmpeg, type MediaLimits } from '@cairn/media';
import { MIN_VIDEO_SIDE, type Transcoded, type VideoFormat, type VideoScratch } from '../domain/media-formats.js';
import { admitEncoded, invalidEncoded } from './encoded-file.js';
import { addLuma, lumaSum, meanLuma } from '../domain/video/luma-mean.js';

/**
 * The service's own decode and re-encode of video files (callers send files, never frames). The upload is written
 * to a private temporary file (an MP4 whose index sits at the end cannot be read from a pipe); ffmpeg decodes it
 * to raw YUV 4:2:0 frames on a pipe, one frame at a time (memory holds a few frames, never the video), and a
 * second ffmpeg encodes the marked frames from a pipe, taking the audio from the upload as it was.
 */

/** What the service re-encodes: MP4 as H.264, WebM as VP9 (the codec family of each container as signed). */
const EMBEDDABLE: ReadonlySet<string> = new Set(['video/mp4', 'video/webm']);

/**
 * x264's speed/size trade-off, measured on the bench's 720p clips as marked (x264 on the marked frames, luma PSNR
 * against them at the CRF the probe picks): "veryfast" with the diamond motion search and the fastest subpixel
 * refinement (me=dia, subme=1) spends 14–40 % less CPU than plain "veryfast" (the larger part of the embed's CPU is
 * this encode) for about the same bits and quality: mandelbrot +1 % bits and +0.4 dB, the photo zoom +0.5 % and
 * +0.5 dB, testsrc2's moving pattern +9 % and −0.3 dB. "superfast" (a third less again) drops the p8×8 partitions:
 * at the bit rate the probe gives it, the answer's luma fell from 40.3 to 39.6 dB against the upload on mandelbrot
 * (the target is 40), so not that. The CRF probe encodes with the same settings, so the bit rate still follows the
 * upload's.
 */
const X264_ARGS = ['-preset', 'veryfast', '-x264-params', 'me=dia:subme=1'];
/** CRF the probe encode runs at; the answer is moved from here by the bit-rate ratio (6 CRF steps ≈ 2× bits). */
const PROBE_CRF = 23;
/**
 * The CRF bounds. Camera footage carries sensor noise, so its bit rate is high: at 14 the answer fell short of the
 * upload's bit rate and its luma PSNR to 39.6 dB (the camera-like clips at 480p and 360p, where the probe asked 11–12);
 * 10 lets it follow the upload down to there.
 */
const MIN_CRF = 10;
const MAX_CRF = 36;
/**
 * Seconds of the upload the CRF probe encodes (its first ones). Measured on the bench's 720p clips: 0.5 s lands
 * within 1 CRF step of 2 s (testsrc2 17.7 / 17.9, mandelbrot 16.4 / 16.4, photo 14.5 / 13.4) for a quarter of the
 * encode, which was a fifth of a 3 s clip's whole CPU.
 */
const PROBE_SECONDS = 0.5;

/** A size of one raw YUV 4:2:0 frame (the luma plane first). */
export function yuv420FrameBytes(width: number, height: number): number {
  return width * height + 2 * Math.ceil(width / 2) * Math.ceil(height / 2);
}

/** The upload in a private temporary directory, removed by `remove`. */
export class VideoFile implements VideoScratch {
  private constructor(
    readonly dir: string,
    readonly path: string,
  ) {}

  static async write(bytes: Uint8Array): Promise<VideoFile> {
    const dir = await mkdtemp(join(tmpdir(), 'cairn-video-wm-'));
    const path = join(dir, 'input');
    await writeFile(path, bytes);
    return new VideoFile(dir, path);
  }

  remove(): Promise<void> {
    return rm(this.dir, { recursive: true, force: true });
  }
}

/** NTSC rates ffmpeg prints rounded, as the exact rationals encoders need. */
const NTSC: Readonly<Record<string, string>> = {
  '23.98': '24000/1001',
  '29.97': '30000/1001',
  '59.94': '60000/1001',
  '119.88': '120000/1001',
};

/** The first video stream of ffmpeg's description: codec, frame size and rate; whether an audio stream exists. */
export function parseVideoStream(text: string): Omit<VideoFormat, 'mediaType' | 'seconds'> | null {
  const line = /Stream #\d+:\d+.*?: Video: ([^\n]*)/.exec(text)?.[1];
  if (!line) return null;
  const codec = line.split(/[ ,]/)[0] ?? '';
  const size = /(?:^|[ ,])(\d{2,5})x(\d{2,5})(?=[ ,\]]|$)/.exec(line);
  const rate = /([\d.]+) fps/.exec(line)?.[1] ?? /([\d.]+) tbr/.exec(line)?.[1];
  if (!codec || !size || !rate) return null;
  const fps = Number(rate);
  if (!Number.isFinite(fps) || fps <= 0 || fps > 240) return null;
  return {
    codec,
    width: Number(size[1]),
    height: Number(size[2]),
    frameRate: NTSC[rate] ?? rate,
    fps,
    hasAudio: /Stream #\d+:\d+.*?: Audio: /.test(text),
  };
}

/**
 * The upload's container and video stream, refused (cairn.validation.invalid_body) when it is not an MP4 or WebM
 * with a decodable video stream of a size that carries a mark, and (cairn.media.too_large) beyond the limits.
 */
export async function probeVideoForEmbedding(
  bytes: Uint8Array,
  file: VideoScratch,
  limits: MediaLimits,
): Promise<VideoFormat> {
  const { sniffed } = await admitEncoded(
    bytes,
    limits,
    (type) => EMBEDDABLE.has(type.mediaType),
    (type) => `the file is ${type?.mediaType ?? 'not a recognised format'}; MP4 and WebM videos are marked`,
  );
  const text = await probeFfmpeg(file.path);
  const stream = parseVideoStream(text);
  if (!stream) throw invalidEncoded('the file has no video stream ffmpeg can read');
  if (Math.min(stream.width, stream.height) < MIN_VIDEO_SIDE)
    throw invalidEncoded(
      `frames are ${stream.width}×${stream.height}; a video watermark needs at least ${MIN_VIDEO_SIDE} pixels a side`,
    );
  if (stream.width % 2 !== 0 || stream.height % 2 !== 0)
    throw invalidEncoded(`frames are ${stream.width}×${stream.height}; 4:2:0 video needs an even width and height`);
  const duration = /Duration: (\d+):(\d{2}):(\d{2}(?:\.\d+)?)/.exec(text);
  const seconds = duration ? Number(duration[1]) * 3600 + Number(duration[2]) * 60 + Number(duration[3]) : 0;
  if (seconds > limits.videoSeconds)
    throw new CairnError('cairn.media.too_large', `This video lasts ${seconds} s; at most ${limits.videoSeconds} s.`);
  return { ...stream, mediaType: sniffed.mediaType as VideoFormat['mediaType'], seconds };
}

/** The video encoder EmbedVideo answers with: the upload's codec family at `crf` (the bench's baseline uses it too). */
export function videoEncoderArgs(format: Pick<VideoFormat, 'mediaType'>, crf: number): string[] {
  return format.mediaType === 'video/webm'
    ? ['-c:v', 'libvpx-vp9', '-crf', String(crf), '-b:v', '0', '-deadline', 'good', '-cpu-used', '4', '-row-mt', '1']
    : ['-c:v', 'libx264', ...X264_ARGS, '-crf', String(crf), '-pix_fmt', 'yuv420p'];
}

/**
 * The CRF that gives about the upload's video bit rate, measured: the first PROBE_SECONDS are encoded once at PROBE_CRF
 * and compared with the same seconds of the upload's own stream; each 2× in bits is about 6 CRF steps (x264 and
 * libvpx alike). Clamped to MIN_CRF–MAX_CRF.
 */
export async function measureCrf(file: VideoScratch, format: VideoFormat): Promise<number> {
  const seconds = String(Math.min(PROBE_SECONDS, Math.max(0.5, format.seconds)));
  const common = ['-t', seconds, '-i', file.path, '-map', '0:v:0', '-an', '-sn', '-dn'];
  const [original, probe] = await Promise.all([
    runFfmpeg({ args: [...common, '-c', 'copy', '-f', 'matroska', 'pipe:1'], timeoutMs: 60_000 }),
    runFfmpeg({
      args: [...common, ...videoEncoderArgs(format, PROBE_CRF), '-f', 'matroska', 'pipe:1'],
      timeoutMs: 120_000,
    }),
  ]);
  if (original.length === 0 || probe.length === 0) return PROBE_CRF;
  const crf = Math.round(PROBE_CRF + 6 * Math.log2(probe.length / original.length));
  return Math.min(MAX_CRF, Math.max(MIN_CRF, crf));
}

/** One ffmpeg process with its stderr kept (the tail, for errors) and its exit as a promise. */
function startFfmpeg(args: string[], stdio: ['pipe' | 'ignore', 'pipe' | 'ignore']) {
  const child = spawn(ffmpegPath(), ['-hide_banner', '-loglevel', 'error', '-nostdin', ...args], {
    stdio: [stdio[0], stdio[1], 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString('utf8')).slice(-8192);
  });
  const exited = new Promise<void>((resolve, reject) => {
    child.on('error', (error) => reject(new FfmpegError(`ffmpeg could not start: ${error.message}`, stderr)));
    child.on('close', (code, signal) => {
      if (code === 0) resolve();
      else
        reject(
          new FfmpegError(
            `ffmpeg exited with ${code ?? signal}: ${stderr.trim().split('\n').slice(-3).join(' | ')}`,
            stderr,
          ),
        );
    });
  });
  exited.catch(() => undefined); // observed by whoever awaits it; a killed process is not an unhandled rejection
  return { child, exited };
}

/**
 * ffmpeg decoding the first `seconds` of the upload's first video stream (nothing else) to raw frames of
 * `pixelFormat` on its stdout, with `timing` (how frames are kept, dropped or resampled in time) before the format.
 */
function startRawDecoder(file: VideoScratch, seconds: number, timing: string[], pixelFormat: 'yuv420p' | 'gray') {
  return startFfmpeg(
    [
      ...['-t', String(seconds), '-i', file.path, '-map', '0:v:0', '-an', '-sn', '-dn'],
      ...timing,
      ...['-f', 'rawvideo', '-pix_fmt', pixelFormat, 'pipe:1'],
    ],
    ['ignore', 'pipe'],
  );
}

/**
 * Raw frames of exactly `frameBytes` from a stream, each in its own buffer (handed to a worker, then encoded).
 * Buffers put back in `spare` are filled again: at 720p a frame is 1.4 MB, and a new one per frame kept the
 * garbage collector busy for a tenth of the process's time.
 */
async function* rawFrames(stream: Readable, frameBytes: number, spare: Uint8Array[] = []): AsyncGenerator<Uint8Array> {
  const next = () => {
    const reused = spare.pop();
    return reused && reused.length === frameBytes ? reused : new Uint8Array(frameBytes);
  };
  let frame = next();
  let filled = 0;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    let offset = 0;
    while (offset < chunk.length) {
      const take = Math.min(frameBytes - filled, chunk.length - offset);
      frame.set(chunk.subarray(offset, offset + take), filled);
      filled += take;
      offset += take;
      if (filled === frameBytes) {
        yield frame;
        frame = next();
        filled = 0;
      }
    }
  }
}

/** Writes `bytes` to the child's stdin, waiting while its pipe is full; `written` once ffmpeg holds them all. */
async function write(child: ChildProcess, bytes: Uint8Array, written?: () => void): Promise<void> {
  if (!child.stdin!.write(bytes, written && ((error) => error || written()))) await once(child.stdin!, 'drain');
}

/**
 * Decodes the upload's first video stream frame by frame (YUV 4:2:0 at its frame rate), passes each frame through
 * `mark` (at most `inFlight` at once, in order), and encodes the results like the upload (see videoEncoderArgs) at
 * the CRF `crf` settles on, with the upload's first audio stream copied: the encoder starts once it is known, the
 * decoder and the marking at once. Stops both processes on failure or after `timeoutMs`.
 */
export async function transcodeFrames(
  file: VideoScratch,
  format: VideoFormat,
  crf: Promise<number>,
  mark: (frame: Uint8Array) => Promise<Uint8Array>,
  options: { timeoutMs: number; maxSeconds: number; inFlight?: number; onProgress?: (frames: number) => void },
): Promise<Transcoded> {
  const { width, height, frameRate } = format;
  const output = join(file.dir, format.mediaType === 'video/webm' ? 'marked.webm' : 'marked.mp4');
  // Frames as they are (no duplicates, none dropped): the encoder stamps them at the stream's rate.
  const decoder = startRawDecoder(file, options.maxSeconds, ['-vsync', 'passthrough'], 'yuv420p');
  let encoder: ReturnType<typeof startFfmpeg> | undefined;
  let stopped = false;
  // Started once the CRF is known; until then the first frames are decoded and marked.
  const encoderReady = crf.then((value) => {
    if (stopped) throw new Error('the video transcode was stopped');
    encoder = startFfmpeg(
      [
        ...['-f', 'rawvideo', '-pix_fmt', 'yuv420p', '-s', `${width}x${height}`, '-framerate', frameRate],
        ...['-i', 'pipe:0', '-i', file.path, '-map', '0:v:0', '-map', '1:a:0?', '-c:a', 'copy'],
        ...videoEncoderArgs(format, value),
        ...(format.mediaType === 'video/webm' ? ['-f', 'webm'] : ['-movflags', '+faststart', '-f', 'mp4']),
        ...['-y', output],
      ],
      ['pipe', 'ignore'],
    );
    encoder.child.stdin!.on('error', () => undefined); // a failed encoder shows in its exit
    return encoder;
  });
  encoderReady.catch(() => undefined); // observed where a frame is encoded
  const stop = () => {
    stopped = true;
    decoder.child.kill('SIGKILL');
    encoder?.child.kill('SIGKILL');
  };
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    stop();
  }, options.timeoutMs);
  try {
    let frames = 0;
    const inFlight = options.inFlight ?? 2;
    const pending: Array<Promise<Uint8Array>> = [];
    // A frame's buffer, once the encoder holds its bytes, takes the next frame the decoder gives.
    const spare: Uint8Array[] = [];
    const encode = async (marked: Uint8Array) => {
      await write((await encoderReady).child, marked, () => spare.push(marked));
      frames++;
      options.onProgress?.(frames);
    };
    for await (const frame of rawFrames(decoder.child.stdout!, yuv420FrameBytes(width, height), spare)) {
      const marking = mark(frame);
      // Awaited in order below; one still in flight when an earlier frame failed (the pool closing for a restart)
      // rejects with nobody left to await it, which must not be an unhandled rejection.
      marking.catch(() => undefined);
      pending.push(marking);
      if (pending.length >= inFlight) await encode(await pending.shift()!);
    }
    for (const next of pending.splice(0)) await encode(await next);
    await decoder.exited;
    if (frames === 0) throw invalidEncoded('no video frames could be decoded');
    const { child, exited } = await encoderReady;
    child.stdin!.end();
    await exited;
    return { encoded: await readFile(output), frames };
  } catch (error) {
    stop();
    if (timedOut)
      throw new CairnError('cairn.media.too_large', `marking the video took longer than ${options.timeoutMs} ms`);
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The luma of the first `maxSeconds`, sampled at up to `sampleFps(width, height)` frames a second (the stream's size)
 * and averaged over windows of one second (the mark is the same in every frame, the picture is not: averaging keeps
 * the one and blurs the other).
 * `visit` gets each window's mean luma plane as 8-bit gray and its start time, and answers whether to go on.
 */
export async function visitLumaWindows(
  file: VideoScratch,
  options: { maxSeconds: number; sampleFps: (width: number, height: number) => number; timeoutMs: number },
  visit: (window: { luma: Uint8Array; width: number; height: number; atSeconds: number }) => Promise<boolean>,
): Promise<'visited' | 'not_video'> {
  const text = await probeFfmpeg(file.path);
  const stream = parseVideoStream(text);
  if (!stream) return 'not_video';
  const { width, height } = stream;
  const fps = Math.max(1, Math.round(Math.min(options.sampleFps(width, height), stream.fps)));
  const decoder = startRawDecoder(file, options.maxSeconds, ['-vf', `fps=${fps}`], 'gray');
  const timer = setTimeout(() => decoder.child.kill('SIGKILL'), options.timeoutMs);
  try {
    const sum = lumaSum(width * height);
    let inWindow = 0;
    let window = 0;
    const flush = async (): Promise<boolean> => {
      const luma = meanLuma(sum, inWindow);
      sum.fill(0);
      inWindow = 0;
      return visit({ luma, width, height, atSeconds: window++ });
    };
    // Each frame is added to the window's sum at once, so one buffer serves them all.
    const spare: Uint8Array[] = [];
    for await (const frame of rawFrames(decoder.child.stdout!, width * height, spare)) {
      addLuma(sum, frame);
      spare.push(frame);
      if (++inWindow === fps && !(await flush())) return 'visited';
    }
    // A tail of at least half a window is read too (a short excerpt may hold one and a half windows).
    if (inWindow >= fps / 2) await flush();
    // A file ffmpeg gives up on before one window is undecodable here (a hostile or truncated file, not our fault);
    // after some windows, what was read stands.
    const failed = await decoder.exited.then(
      () => false,
      () => true,
    );
    return failed && window === 0 ? 'not_video' : 'visited';
  } finally {
    clearTimeout(timer);
    decoder.child.kill('SIGKILL');
  }
}
