import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CairnError } from '@cairn/errors';
import { decodeAudioMono, FfmpegError, probeFfmpeg, runFfmpeg, type MediaLimits } from '@cairn/media';
import { ANALYSIS_RATE, type AudioFormat, type DecodedAudio, type VideoAudioTrack } from '../domain/media-formats.js';
import { admitEncoded, invalidEncoded } from './encoded-file.js';

/**
 * The service's own decode and re-encode of audio files (callers send files, never samples): the header is
 * checked against the media limits first, then ffmpeg decodes under them. The marked file keeps the upload's
 * container, rate, channels and quality: WAV stays PCM at its depth, FLAC lossless at its depth, MP3 and OGG
 * re-encode at the bit rate the upload declares.
 */

const EMBEDDABLE: ReadonlySet<string> = new Set(['audio/wav', 'audio/flac', 'audio/mpeg', 'audio/ogg']);

/** The first audio stream of ffmpeg's description: codec, rate, channels, sample format, bit rate. */
export function parseAudioStream(text: string, mediaType: string): Omit<AudioFormat, 'seconds'> | null {
  const line = /Stream #\d+:\d+.*?: Audio: ([^\n]*)/.exec(text)?.[1];
  if (!line) return null;
  const parts = line.split(', ');
  const codec = (parts[0] ?? '').split(' ')[0] ?? '';
  const rate = /(\d+) Hz/.exec(line);
  if (!codec || !rate) return null;
  const layout = parts[2] ?? '';
  const channels =
    layout === 'mono'
      ? 1
      : layout === 'stereo'
        ? 2
        : Number(
            /(\d+) channels/.exec(layout)?.[1] ??
              /^(\d+)\.(\d+)/
                .exec(layout)
                ?.slice(1, 3)
                .reduce((a, b) => a + Number(b), 0) ??
              0,
          );
  const sampleFormat = (parts[3] ?? '').split(' ')[0] ?? '';
  const bits = /\((\d+) bit\)/.exec(parts[3] ?? '');
  const kbps = /(\d+) kb\/s/.exec(line) ?? /bitrate: (\d+) kb\/s/.exec(text);
  if (!Number.isInteger(channels) || channels < 1 || channels > 8) return null;
  return {
    mediaType,
    codec,
    sampleRate: Number(rate[1]),
    channels,
    sampleFormat,
    ...(bits ? { bitsPerSample: Number(bits[1]) } : {}),
    ...(kbps ? { kbps: Number(kbps[1]) } : {}),
  };
}

async function withTemp<T>(work: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), 'cairn-audio-'));
  try {
    return await work(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * The samples of one audio stream as they are (its own rate and channels, interleaved float32), at most
 * `maxSeconds` of them: the output is bounded before ffmpeg runs. `input` is a file path, or `pipe:0` with `bytes`.
 */
async function decodeInterleaved(
  source: { input: string; bytes?: Buffer; select: string[]; timeoutMs?: number },
  stream: { channels: number; sampleRate: number },
  maxSeconds: number,
): Promise<Float32Array> {
  const raw = await runFfmpeg({
    args: [
      '-i',
      source.input,
      '-t',
      String(maxSeconds),
      ...source.select,
      '-f',
      'f32le',
      '-ac',
      String(stream.channels),
      '-ar',
      String(stream.sampleRate),
      'pipe:1',
    ],
    ...(source.bytes ? { input: source.bytes } : {}),
    ...(source.timeoutMs !== undefined ? { timeoutMs: source.timeoutMs } : {}),
    maxOutputBytes: Math.ceil(maxSeconds * stream.sampleRate * stream.channels * 4) + 4096,
  });
  const samples = new Float32Array(raw.length >> 2);
  new Uint8Array(samples.buffer).set(raw.subarray(0, samples.length * 4));
  return samples;
}

/** The upload to mark: limits from its header, then its samples as they are and the 16 kHz mono mix. */
export async function decodeAudioForEmbedding(encoded: Uint8Array, limits: MediaLimits): Promise<DecodedAudio> {
  const { bytes, sniffed, probe } = await admitEncoded(
    encoded,
    limits,
    (type) => EMBEDDABLE.has(type.mediaType),
    (type) => `encoded must be a WAV, FLAC, MP3 or OGG file${type ? `, got ${type.mediaType}` : ''}`,
  );
  const description = await withTemp(async (dir) => {
    const path = join(dir, 'input');
    await writeFile(path, bytes);
    return probeFfmpeg(path);
  });
  const stream = parseAudioStream(description, sniffed.mediaType);
  // An upload that only looks like audio is the sign's unsupported_mime (the signer decoded it before, and said so).
  if (!stream)
    throw new CairnError(
      'cairn.sign.unsupported_mime',
      `The file looks like ${sniffed.mediaType} but has no audio stream ffmpeg can read.`,
    );
  const maxSeconds = Math.min(
    limits.audioSeconds,
    probe?.seconds !== undefined ? probe.seconds + 1 : limits.audioSeconds,
  );
  try {
    const samples = await decodeInterleaved({ input: 'pipe:0', bytes, select: ['-vn'] }, stream, maxSeconds);
    const mono = await decodeAudioMono(bytes, ANALYSIS_RATE, maxSeconds);
    const seconds = samples.length / stream.channels / stream.sampleRate;
    // A WAV header states its data size exactly: much less sound than it states is a truncated upload, refused as
    // its container would have been, rather than re-encoded whole and signed as if it were the file sent.
    if (sniffed.mediaType === 'audio/wav' && probe?.seconds !== undefined && probe.seconds - seconds > 0.05) {
      throw new CairnError(
        'cairn.sign.unsupported_mime',
        `The WAV file is truncated: its header declares ${probe.seconds.toFixed(2)} s, it holds ${seconds.toFixed(2)} s.`,
      );
    }
    return { format: { ...stream, seconds }, samples, mono };
  } catch (error) {
    if (error instanceof FfmpegError)
      throw new CairnError(
        'cairn.sign.unsupported_mime',
        `The file looks like ${sniffed.mediaType} but cannot be decoded.`,
      );
    throw error;
  }
}

/** A received file to read: any audio (or a video's first audio track) ffmpeg decodes, as 16 kHz mono; null if none. */
export async function decodeAudioForDetection(
  encoded: Uint8Array,
  limits: MediaLimits,
  /** Decode no more than this (the detector reads only its first seconds). */
  readSeconds = Infinity,
): Promise<Float32Array | null> {
  const { bytes, sniffed } = await admitEncoded(
    encoded,
    limits,
    (type) => type.modality === 'audio' || type.modality === 'video',
    (type) => `encoded must be an audio or video file${type ? `, got ${type.mediaType}` : ''}`,
  );
  const maxSeconds = Math.min(readSeconds, sniffed.modality === 'audio' ? limits.audioSeconds : limits.videoSeconds);
  try {
    return await decodeAudioMono(bytes, ANALYSIS_RATE, maxSeconds);
  } catch (error) {
    // A file whose audio cannot be decoded carries no readable mark: not an error for verification.
    if (error instanceof FfmpegError) return null;
    throw error;
  }
}

/** ffmpeg output options that re-create the upload's encoding. */
export function encoderArgs(format: AudioFormat): { args: string[]; extension: string } {
  const kbps = String(format.kbps ?? 128);
  switch (format.mediaType) {
    case 'audio/wav':
      // The same PCM codec: pcm_s16le stays 16-bit, pcm_s24le 24-bit, pcm_f32le float.
      // bitexact: no LIST/INFO encoder chunk, so the file is RIFF, fmt and data like most uploads.
      return {
        args: [
          '-c:a',
          format.codec.startsWith('pcm_') ? format.codec : 'pcm_s16le',
          '-fflags',
          '+bitexact',
          '-f',
          'wav',
        ],
        extension: 'wav',
      };
    case 'audio/flac':
      return {
        args: [
          '-c:a',
          'flac',
          '-sample_fmt',
          format.sampleFormat === 's16' ? 's16' : 's32',
          ...(format.bitsPerSample ? ['-bits_per_raw_sample', String(format.bitsPerSample)] : []),
          '-f',
          'flac',
        ],
        extension: 'flac',
      };
    case 'audio/mpeg':
      return { args: ['-c:a', 'libmp3lame', '-b:a', `${kbps}k`, '-f', 'mp3'], extension: 'mp3' };
    case 'audio/ogg':
      return format.codec === 'opus'
        ? { args: ['-c:a', 'libopus', '-b:a', `${kbps}k`, '-f', 'ogg'], extension: 'ogg' }
        : { args: ['-c:a', 'libvorbis', '-b:a', `${kbps}k`, '-f', 'ogg'], extension: 'ogg' };
    default:
      throw invalidEncoded(`cannot re-encode ${format.mediaType}`);
  }
}

/** The marked samples encoded like the upload (through a file: WAV and MP3 headers are finished by seeking back). */
export async function encodeMarkedAudio(samples: Float32Array, format: AudioFormat): Promise<Buffer> {
  const { args, extension } = encoderArgs(format);
  return withTemp(async (dir) => {
    const output = join(dir, `marked.${extension}`);
    const input = Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength);
    await runFfmpeg({
      args: [
        '-f',
        'f32le',
        '-ar',
        String(format.sampleRate),
        '-ac',
        String(format.channels),
        '-i',
        'pipe:0',
        ...args,
        '-y',
        output,
      ],
      input,
      timeoutMs: 120_000,
    });
    return readFile(output);
  });
}

/** Opus encodes only these rates; another rate is resampled to 48 kHz for it. */
const OPUS_RATES: ReadonlySet<number> = new Set([8000, 12_000, 16_000, 24_000, 48_000]);
/** Bit rates a re-encoded track is held to (kb/s): a header's claim outside them is not a quality to copy. */
const MIN_TRACK_KBPS = 24;
const MAX_TRACK_KBPS = 320;

/** The audio stream's own bit rate from ffmpeg's description (never the file's total, which counts the video). */
function declaredTrackKbps(description: string): number | undefined {
  const line = /Stream #\d+:\d+.*?: Audio: ([^\n]*)/.exec(description)?.[1];
  const kbps = line ? /(\d+) kb\/s/.exec(line) : null;
  return kbps ? Number(kbps[1]) : undefined;
}

/**
 * The first audio track of the video at `path` (a container the service re-encodes: MP4 or WebM), or null when it
 * has none ffmpeg decodes. Its bit rate is the stream's declared one, else measured by copying the stream out
 * (WebM declares none); at most `maxSeconds` are decoded.
 */
export async function decodeVideoAudioTrack(
  path: string,
  container: string,
  maxSeconds: number,
): Promise<VideoAudioTrack | null> {
  const description = await probeFfmpeg(path);
  const stream = parseAudioStream(description, container);
  if (!stream) return null;
  try {
    const samples = await decodeInterleaved(
      { input: path, select: ['-map', '0:a:0'], timeoutMs: 120_000 },
      stream,
      maxSeconds,
    );
    const seconds = samples.length / stream.channels / stream.sampleRate;
    if (seconds === 0) return null;
    let kbps = declaredTrackKbps(description);
    if (kbps === undefined) {
      const copied = await runFfmpeg({
        args: ['-i', path, '-t', String(maxSeconds), '-map', '0:a:0', '-c', 'copy', '-f', 'matroska', 'pipe:1'],
        maxOutputBytes: Math.ceil((maxSeconds * MAX_TRACK_KBPS * 1000) / 8) + 1024 * 1024,
      });
      kbps = Math.round((copied.length * 8) / seconds / 1000);
    }
    return {
      samples,
      sampleRate: stream.sampleRate,
      channels: stream.channels,
      codec: container === 'video/webm' ? 'libopus' : 'aac',
      kbps: Math.min(MAX_TRACK_KBPS, Math.max(MIN_TRACK_KBPS, kbps)),
      seconds,
    };
  } catch (error) {
    // An audio track that does not decode is left as it is: the frames carry the mark.
    if (error instanceof FfmpegError) return null;
    throw error;
  }
}

/**
 * The video at `path` with its video stream copied and `track`'s samples (marked) as its audio, encoded in the
 * container's codec family at the track's bit rate. Written through a file: MP4's index is finished by seeking back.
 */
export async function replaceVideoAudioTrack(path: string, container: string, track: VideoAudioTrack): Promise<Buffer> {
  const webm = container === 'video/webm';
  const rate = track.codec === 'libopus' && !OPUS_RATES.has(track.sampleRate) ? ['-ar', '48000'] : [];
  return withTemp(async (dir) => {
    const output = join(dir, webm ? 'marked.webm' : 'marked.mp4');
    await runFfmpeg({
      args: [
        '-i',
        path,
        '-f',
        'f32le',
        '-ar',
        String(track.sampleRate),
        '-ac',
        String(track.channels),
        '-i',
        'pipe:0',
        '-map',
        '0:v:0',
        '-map',
        '1:a:0',
        '-c:v',
        'copy',
        '-c:a',
        track.codec,
        '-b:a',
        `${track.kbps}k`,
        ...rate,
        ...(webm ? ['-f', 'webm'] : ['-movflags', '+faststart', '-f', 'mp4']),
        '-y',
        output,
      ],
      input: Buffer.from(track.samples.buffer, track.samples.byteOffset, track.samples.byteLength),
      timeoutMs: 120_000 + track.seconds * 1000,
    });
    return readFile(output);
  });
}
