import type { EncodableImageType } from '@cairn/media';
import type { RawImage } from './image/raw-image.js';

// The shapes of the media the service decodes and encodes (its codecs are adapters; app/ports.ts names them).

export interface DecodedForEmbedding {
  readonly image: RawImage;
  readonly mediaType: EncodableImageType;
}

/** The rate every audio algorithm works at (every cairn-audio-wm band is under its Nyquist). */
export const ANALYSIS_RATE = 16_000;

/** How the upload is encoded, so the marked file can be encoded the same way. */
export interface AudioFormat {
  readonly mediaType: string;
  readonly codec: string;
  readonly sampleRate: number;
  readonly channels: number;
  /** ffmpeg's sample format (s16, s32, fltp, ...), and the bits really used when it says ("s32 (24 bit)"). */
  readonly sampleFormat: string;
  readonly bitsPerSample?: number;
  /** The declared bit rate in kb/s (lossy codecs). */
  readonly kbps?: number;
  readonly seconds: number;
}

export interface DecodedAudio {
  readonly format: AudioFormat;
  /** Interleaved float samples at the upload's rate and channels. */
  readonly samples: Float32Array;
  /** Mono mix at ANALYSIS_RATE, as detection will read it. */
  readonly mono: Float32Array;
}

/** The first audio track of a video, decoded at its own rate and channels, and how to encode it again. */
export interface VideoAudioTrack {
  readonly samples: Float32Array;
  readonly sampleRate: number;
  readonly channels: number;
  /** The encoder for the container's codec family (AAC in MP4, Opus in WebM) and the track's bit rate in kb/s. */
  readonly codec: 'aac' | 'libopus';
  readonly kbps: number;
  readonly seconds: number;
}

/** Frames may not be smaller than this on a side: the v2 grid would hold less than a chip per pixel. */
export const MIN_VIDEO_SIDE = 128;

export interface VideoFormat {
  readonly mediaType: 'video/mp4' | 'video/webm';
  /** The upload's video codec as ffmpeg names it (h264, vp9, vp8, ...). */
  readonly codec: string;
  readonly width: number;
  readonly height: number;
  /** Frames per second as ffmpeg takes it (a rational for the NTSC rates). */
  readonly frameRate: string;
  readonly fps: number;
  readonly seconds: number;
  readonly hasAudio: boolean;
}

export interface Transcoded {
  readonly encoded: Buffer;
  readonly frames: number;
}

/** An upload written to a private temporary directory for ffmpeg, removed by `remove`. */
export interface VideoScratch {
  readonly dir: string;
  readonly path: string;
  remove(): Promise<void>;
}
