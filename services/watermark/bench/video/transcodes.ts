// Transcodes a video watermark meets, shared by the video benches and services/watermark/test/video-watermark.test.ts
// so both put the mark through the same encoder settings.

/**
 * A VP9 WebM at `crf` as a fast uploader's encoder makes one (realtime deadline, cpu-used 8, constant quality);
 * `audio` says what becomes of the sound (default: dropped).
 */
export const vp9Webm = (crf: number, audio: readonly string[] = ['-an']): string[] => [
  '-c:v',
  'libvpx-vp9',
  '-crf',
  String(crf),
  '-b:v',
  '0',
  '-deadline',
  'realtime',
  '-cpu-used',
  '8',
  ...audio,
  '-f',
  'webm',
];
