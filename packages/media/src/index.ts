export { sniffMediaType, SNIFF_BYTES, type SniffedType, type Modality } from './sniff.js';
export { decodeAudioMono, ffmpegPath, FfmpegError, runFfmpeg, type FfmpegRun } from './ffmpeg.js';
export { decodeRgb, type RgbPixels } from './pixels.js';
export { isSidecarMediaType, SIDECAR_MEDIA_TYPES, type SidecarMediaType } from './sidecar.js';
