import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRequire } from 'node:module';

/**
 * ffmpeg for decoding audio and video. The binary comes from the npm registry (`@ffmpeg-installer/ffmpeg`, a
 * static build), so a fresh machine needs nothing else; `FFMPEG_PATH` points at another build (e.g. Debian's).
 */
export function ffmpegPath(env: NodeJS.ProcessEnv = process.env): string {
  if (env.FFMPEG_PATH) return env.FFMPEG_PATH;
  const require = createRequire(import.meta.url);
  return (require('@ffmpeg-installer/ffmpeg') as { path: string }).path;
}

export class FfmpegError extends Error {
  constructor(
    message: string,
    readonly stderr: string,
  ) {
    super(message);
    this.name = 'FfmpegError';
  }
}

export interface FfmpegRun {
  /** Arguments after the binary; use `pipe:0` for the input and `pipe:1` for the output. */
  args: string[];
  /** Written to ffmpeg's stdin. */
  input?: Buffer;
  /** Output above this many bytes stops ffmpeg and fails the run (a decompression bomb guard). */
  maxOutputBytes?: number;
  timeoutMs?: number;
}

/** Runs ffmpeg once and returns its stdout; a non-zero exit, a timeout or oversized output is an FfmpegError. */
export function runFfmpeg(run: FfmpegRun): Promise<Buffer> {
  const maxOutput = run.maxOutputBytes ?? 256 * 1024 * 1024;
  return new Promise((resolve, reject) => {
    const child = spawn(ffmpegPath(), ['-hide_banner', '-loglevel', 'error', '-nostdin', ...run.args], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const chunks: Buffer[] = [];
    let size = 0;
    let stderr = '';
    let failure: FfmpegError | undefined;
    const timer = setTimeout(() => {
      failure = new FfmpegError(`ffmpeg took longer than ${run.timeoutMs} ms`, stderr);
      child.kill('SIGKILL');
    }, run.timeoutMs ?? 60_000);
    child.stdout.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxOutput) {
        failure ??= new FfmpegError(`ffmpeg output exceeds ${maxOutput} bytes`, stderr);
        child.kill('SIGKILL');
        return;
      }
      chunks.push(chunk);
    });
    child.stderr.on('data', (chunk: Buffer) => {
      if (stderr.length < 8192) stderr += chunk.toString('utf8');
    });
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(new FfmpegError(`ffmpeg could not start: ${error.message}`, stderr));
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      if (failure) reject(failure);
      else if (code !== 0)
        reject(
          new FfmpegError(`ffmpeg exited with ${code}: ${stderr.trim().split('\n').slice(-3).join(' | ')}`, stderr),
        );
      else resolve(Buffer.concat(chunks));
    });
    // ffmpeg may stop reading early (it has what it needs, or the input is malformed): that is not our error.
    child.stdin.on('error', () => undefined);
    child.stdin.end(run.input ?? Buffer.alloc(0));
  });
}

/**
 * Decodes any audio (or a video's first audio track) to mono 32-bit float PCM at `sampleRate`. From a private
 * temporary file, not a pipe: an MP4/M4A whose index (moov) follows the samples, as most tools write AAC in M4A,
 * decodes to nothing from a pipe (ffmpeg cannot seek back to the samples), and such uploads read as silence.
 */
export async function decodeAudioMono(bytes: Buffer, sampleRate: number, maxSeconds = 600): Promise<Float32Array> {
  const dir = await mkdtemp(join(tmpdir(), 'cairn-audio-'));
  try {
    const input = join(dir, 'input');
    await writeFile(input, bytes);
    const out = await runFfmpeg({
      args: [
        '-i',
        input,
        '-t',
        String(maxSeconds),
        '-vn',
        '-ac',
        '1',
        '-ar',
        String(sampleRate),
        '-f',
        'f32le',
        'pipe:1',
      ],
      maxOutputBytes: maxSeconds * sampleRate * 4 + 4096,
    });
    // Copy: the Buffer's byte offset need not be 4-aligned.
    const samples = new Float32Array(out.length >> 2);
    new Uint8Array(samples.buffer).set(out.subarray(0, samples.length * 4));
    return samples;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * ffmpeg's description of a file's container (durations, streams, frame sizes) from its headers, with no
 * output asked for: nothing is decoded. ffmpeg exits non-zero ("no output file"), so only the text counts.
 */
export function probeFfmpeg(path: string, timeoutMs = 10_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(ffmpegPath(), ['-hide_banner', '-nostdin', '-loglevel', 'info', '-i', path], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.stderr.on('data', (chunk: Buffer) => {
      if (stderr.length < 65_536) stderr += chunk.toString('utf8');
    });
    child.on('error', (error) => {
      clearTimeout(timer);
      reject(new FfmpegError(`ffmpeg could not start: ${error.message}`, stderr));
    });
    child.on('close', () => {
      clearTimeout(timer);
      resolve(stderr);
    });
  });
}
