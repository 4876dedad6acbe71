export { sniffMediaType, SNIFF_BYTES, type SniffedType, type Modality } from './sniff.js';
export { decodeAudioMono, ffmpegPath, FfmpegError, runFfmpeg, type FfmpegRun } from './ffmpeg.js';
