import { readFile } from 'node:fs/promises';
import { runFfmpeg } from '@cairn/media';
import { SHARED_DIR } from '../../packages/testing/src/shared.js';

/** Video clips made here with ffmpeg (no fixtures): a moving test pattern or a photograph slowly zoomed. */
export type ClipKind = 'testsrc2' | 'mandelbrot' | 'photo';

export async function clip(
  kind: ClipKind,
  options: {
    seconds: number;
    width: number;
    height: number;
    fps?: number;
    container?: 'mp4' | 'webm';
    audio?: boolean;
  },
): Promise<Buffer> {
  const { seconds, width, height } = options;
  const fps = options.fps ?? 25;
  const size = `${width}x${height}`;
  const source =
    kind === 'photo'
      ? ['-loop', '1', '-i', `${SHARED_DIR}/fixtures/photos/coffee.png`]
      : [
          '-f',
          'lavfi',
          '-i',
          kind === 'testsrc2' ? `testsrc2=size=${size}:rate=${fps}` : `mandelbrot=size=${size}:rate=${fps}`,
        ];
  const filter =
    kind === 'photo'
      ? ['-vf', `scale=${width}:${height},zoompan=z='min(zoom+0.0015,1.3)':d=${seconds * fps}:s=${size}:fps=${fps}`]
      : [];
  const audio = options.audio ? ['-f', 'lavfi', '-i', `sine=frequency=330:sample_rate=48000`] : [];
  const webm = options.container === 'webm';
  return runFfmpeg({
    args: [
      ...source,
      ...audio,
      '-t',
      String(seconds),
      ...filter,
      ...(webm
        ? ['-c:v', 'libvpx-vp9', '-crf', '30', '-b:v', '0', '-deadline', 'realtime', '-cpu-used', '8']
        : ['-c:v', 'libx264', '-preset', 'fast', '-crf', '18']),
      '-pix_fmt',
      'yuv420p',
      ...(options.audio ? (webm ? ['-c:a', 'libopus', '-b:a', '64k'] : ['-c:a', 'aac', '-b:a', '128k']) : []),
      ...(webm ? ['-f', 'webm'] : ['-movflags', 'frag_keyframe+empty_moov', '-f', 'mp4']),
      'pipe:1',
    ],
    timeoutMs: 120_000,
  });
}

/**
 * A slideshow of real photos (`photos`, file paths), `secondsEach` a photo, 320×240 at 10 fps, H.264 CRF 23 with the
 * index first, written to `out` (a file, as most tools write MP4) and read back: hard cuts are real scene changes.
 */
export async function photoSlideshow(photos: string[], out: string, secondsEach: number): Promise<Buffer> {
  const inputs = photos.flatMap((p) => ['-loop', '1', '-t', String(secondsEach), '-i', p]);
  const frame =
    'scale=320:240:force_original_aspect_ratio=decrease,pad=320:240:(ow-iw)/2:(oh-ih)/2,setsar=1,fps=10,format=yuv420p';
  const graph = `${photos.map((_, i) => `[${i}]${frame}[v${i}]`).join(';')};${photos.map((_, i) => `[v${i}]`).join('')}concat=n=${photos.length}:v=1:a=0[v]`;
  const encode = ['-c:v', 'libx264', '-preset', 'veryfast', '-crf', '23', '-movflags', '+faststart'];
  await runFfmpeg({
    args: ['-y', ...inputs, '-filter_complex', graph, '-map', '[v]', ...encode, out],
    timeoutMs: 60_000,
  });
  return readFile(out);
}

/** The clip re-encoded through ffmpeg with `args` (output options), as MP4 unless the args name a format. */
export function transcoded(bytes: Buffer, args: string[]): Promise<Buffer> {
  const format = args.includes('-f') ? [] : ['-movflags', 'frag_keyframe+empty_moov', '-f', 'mp4'];
  return runFfmpeg({ args: ['-i', 'pipe:0', ...args, ...format, 'pipe:1'], input: bytes, timeoutMs: 120_000 });
}
