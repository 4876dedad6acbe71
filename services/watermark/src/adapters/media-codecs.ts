import type { MediaCodecs } from '../app/ports.js';
import {
  decodeAudioForDetection,
  decodeAudioForEmbedding,
  decodeVideoAudioTrack,
  encodeMarkedAudio,
  replaceVideoAudioTrack,
} from './audio-codec.js';
import { decodeForDetection, decodeForEmbedding, encodeMarked } from './image-codec.js';
import { measureCrf, probeVideoForEmbedding, transcodeFrames, VideoFile, visitLumaWindows } from './video-codec.js';

/** The codecs service.ts injects: sharp for images, ffmpeg for audio and video. */
export const mediaCodecs: MediaCodecs = {
  decodeForEmbedding,
  decodeForDetection,
  encodeMarked,
  decodeAudioForEmbedding,
  decodeAudioForDetection,
  encodeMarkedAudio,
  decodeVideoAudioTrack,
  replaceVideoAudioTrack,
  writeVideo: (bytes) => VideoFile.write(bytes),
  probeVideoForEmbedding,
  measureCrf,
  transcodeFrames,
  visitLumaWindows,
};
