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

/** The clip re-encoded through ffmpeg with `args` (output options), as MP4 unless the args name a format. */
export function transcoded(bytes: Buffer, args: string[]): Promise<Buffer> {
  const format = args.includes('-f') ? [] : ['-movflags', 'frag_keyframe+empty_moov', '-f', 'mp4'];
  return runFfmpeg({ args: ['-i', 'pipe:0', ...args, ...format, 'pipe:1'], input: bytes, timeoutMs: 120_000 });
}
