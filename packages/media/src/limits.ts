import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { z } from 'zod';
import { CairnError } from '@cairn/errors';
import { probeFfmpeg } from './ffmpeg.js';
import type { SniffedType } from '@cairn/sniff';

/**
 * What a service decodes at most. Checked from the file's headers before any decode, because a few hundred KB of
 * PNG can declare 100 megapixels (300 MB of RGB), and a 44-byte WAV header can declare ten hours of samples.
 */
export interface MediaLimits {
  /** Pixels of one image (width × height of its first page). */
  readonly imagePixels: number;
  readonly audioSeconds: number;
  /** Pixels of one video frame: 3840 × 2160 (4K UHD) by default. */
  readonly videoPixels: number;
  readonly videoSeconds: number;
}

export const DEFAULT_MEDIA_LIMITS: MediaLimits = {
  imagePixels: 50_000_000,
  audioSeconds: 30 * 60,
  videoPixels: 3840 * 2160,
  videoSeconds: 30 * 60,
};

/** The limit variables every service that decodes uploads spreads into its config shape. */
export const mediaLimitsConfigShape = {
  /** Pixels of one image (width × height), read from its header before decoding; more is 422 `cairn.media.too_large`. */
  MEDIA_MAX_IMAGE_PIXELS: z.coerce.number().int().positive().default(DEFAULT_MEDIA_LIMITS.imagePixels),
  /** Duration an audio file may declare (WAV header; other containers as ffmpeg reads them). */
  MEDIA_MAX_AUDIO_SECONDS: z.coerce.number().positive().default(DEFAULT_MEDIA_LIMITS.audioSeconds),
  /** Pixels of one video frame (3840×2160). */
  MEDIA_MAX_VIDEO_PIXELS: z.coerce.number().int().positive().default(DEFAULT_MEDIA_LIMITS.videoPixels),
  /** Duration a video file may declare (as ffmpeg reads it). */
  MEDIA_MAX_VIDEO_SECONDS: z.coerce.number().positive().default(DEFAULT_MEDIA_LIMITS.videoSeconds),
};

export function mediaLimitsOf(config: {
  MEDIA_MAX_IMAGE_PIXELS: number;
  MEDIA_MAX_AUDIO_SECONDS: number;
  MEDIA_MAX_VIDEO_PIXELS: number;
  MEDIA_MAX_VIDEO_SECONDS: number;
}): MediaLimits {
  return {
    imagePixels: config.MEDIA_MAX_IMAGE_PIXELS,
    audioSeconds: config.MEDIA_MAX_AUDIO_SECONDS,
    videoPixels: config.MEDIA_MAX_VIDEO_PIXELS,
    videoSeconds: config.MEDIA_MAX_VIDEO_SECONDS,
  };
}

/** What the headers declare; a field is absent when the container does not say (then decoders' own caps apply). */
export interface MediaProbe {
  readonly width?: number;
  readonly height?: number;
  readonly seconds?: number;
}

/** Image dimensions from the header only (sharp's metadata does not decode pixels); null when sharp cannot read it. */
export async function probeImage(bytes: Buffer): Promise<MediaProbe | null> {
  try {
    const meta = await sharp(bytes, { limitInputPixels: false }).metadata();
    if (!meta.width || !meta.height) return null;
    // For multi-page images (animated WebP/GIF) height is the first page's: only the first page is ever decoded.
    return { width: meta.width, height: meta.pageHeight ?? meta.height };
  } catch {
    return null;
  }
}

/**
 * Duration of a PCM WAV from its `fmt ` byte rate and `data` size: what the header claims, which is what a
 * decoder would try to produce. Null when the chunks are not there (ffmpeg then gets its turn).
 */
export function probeWav(bytes: Buffer): MediaProbe | null {
  if (bytes.length < 12 || bytes.toString('latin1', 0, 4) !== 'RIFF' || bytes.toString('latin1', 8, 12) !== 'WAVE')
    return null;
  let byteRate = 0;
  let offset = 12;
  // Bounded walk: a file of thousands of tiny chunks is not worth reading further.
  for (let chunks = 0; chunks < 64 && offset + 8 <= bytes.length; chunks++) {
    const id = bytes.toString('latin1', offset, offset + 4);
    const size = bytes.readUInt32LE(offset + 4);
    // The byte rate is bytes 8..12 of the chunk body: a short or cut `fmt ` chunk has none (found by the fuzz suite).
    if (id === 'fmt ' && offset + 20 <= bytes.length) byteRate = bytes.readUInt32LE(offset + 8 + 8);
    if (id === 'data') {
      if (byteRate === 0) return null;
      // 0xFFFFFFFF (or 0) marks a streamed WAV of unknown length: what is actually there counts.
      const claimed = size === 0xffffffff || size === 0 ? bytes.length - offset - 8 : size;
      return { seconds: claimed / byteRate };
    }
    offset += 8 + size + (size & 1);
  }
  return null;
}

/** Duration and largest video frame from ffmpeg's reading of the container headers (no decoding). */
async function probeContainer(bytes: Buffer): Promise<MediaProbe | null> {
  // A file, not a pipe: MP4s with the index at the end cannot be probed from a stream.
  const dir = await mkdtemp(join(tmpdir(), 'cairn-probe-'));
  try {
    const path = join(dir, 'input');
    await writeFile(path, bytes);
    const text = await probeFfmpeg(path);
    const duration = /Duration: (\d+):(\d{2}):(\d{2}(?:\.\d+)?)/.exec(text);
    const seconds = duration ? Number(duration[1]) * 3600 + Number(duration[2]) * 60 + Number(duration[3]) : undefined;
    let width: number | undefined;
    let height: number | undefined;
    for (const match of text.matchAll(/Stream #\d+:\d+.*?: Video: .*?(\d{2,6})x(\d{2,6})/g)) {
      const [w, h] = [Number(match[1]), Number(match[2])];
      if (width === undefined || height === undefined || w * h > width * height) [width, height] = [w, h];
    }
    return {
      ...(seconds !== undefined ? { seconds } : {}),
      ...(width !== undefined && height !== undefined ? { width, height } : {}),
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

function tooLarge(detail: string, limit: Record<string, number>): CairnError {
  return new CairnError('cairn.media.too_large', detail, { limit });
}

const minutes = (seconds: number) => `${Math.round((seconds / 60) * 10) / 10} minutes`;

/**
 * Reads what the file declares and refuses it, before anything is decoded, when it exceeds `limits`:
 * cairn.media.too_large. Answers the probe (null when the headers cannot be read: the decoder then refuses
 * the file its own way, under its own caps). Text is not media here and passes.
 */
export async function checkMediaLimits(
  bytes: Buffer,
  type: SniffedType,
  limits: MediaLimits,
): Promise<MediaProbe | null> {
  if (type.modality === 'text') return null;
  if (type.modality === 'image') {
    const probe = await probeImage(bytes);
    if (probe?.width && probe.height && probe.width * probe.height > limits.imagePixels) {
      throw tooLarge(
        `This image is ${probe.width}×${probe.height} (${((probe.width * probe.height) / 1e6).toFixed(1)} megapixels); at most ${(limits.imagePixels / 1e6).toFixed(1)} megapixels are accepted.`,
        { image_pixels: limits.imagePixels },
      );
    }
    return probe;
  }
  // A container ffmpeg cannot parse declares no duration or frame size to check here; the parser that reads it
  // next refuses it with its own problem.
  const probe =
    (type.mediaType === 'audio/wav' ? probeWav(bytes) : null) ?? (await probeContainer(bytes).catch(() => null));
  if (!probe) return null;
  const maxSeconds = type.modality === 'audio' ? limits.audioSeconds : limits.videoSeconds;
  if (probe.seconds !== undefined && probe.seconds > maxSeconds) {
    throw tooLarge(
      `This ${type.modality} declares ${minutes(probe.seconds)}; at most ${minutes(maxSeconds)} are accepted.`,
      { [`${type.modality}_seconds`]: maxSeconds },
    );
  }
  if (type.modality === 'video' && probe.width && probe.height && probe.width * probe.height > limits.videoPixels) {
    throw tooLarge(
      `This video's frames are ${probe.width}×${probe.height}; at most ${limits.videoPixels} pixels per frame (3840×2160 by default) are accepted.`,
      { video_pixels: limits.videoPixels },
    );
  }
  return probe;
}
