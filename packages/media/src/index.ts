export { sniffMediaType, SNIFF_BYTES, type SniffedType, type Modality } from '@cairn/sniff';
export { decodeAudioMono, ffmpegPath, FfmpegError, probeFfmpeg, runFfmpeg, type FfmpegRun } from './ffmpeg.js';
export {
  decodeImage,
  decodeRgb,
  encodeImage,
  makeThumbnail,
  thumbnailOfFile,
  type DecodedImage,
  type EncodableImageType,
  type RgbPixels,
} from './pixels.js';
export { isSidecarMediaType, SIDECAR_MEDIA_TYPES, type SidecarMediaType } from './sidecar.js';
export {
  checkMediaLimits,
  DEFAULT_MEDIA_LIMITS,
  mediaLimitsConfigShape,
  mediaLimitsOf,
  probeImage,
  probeWav,
  type MediaLimits,
  type MediaProbe,
} from './limits.js';
