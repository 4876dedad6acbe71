/**
 * Camera-like clips for the video benches, made from the real photographs of the shared fixtures (there is no real
 * camera footage on this machine): two shots joined by a cut, each a handheld take of one photograph (a slow zoom
 * with a wandering pan, a small rotation jitter resampled bilinearly, so the picture moves by fractions of a pixel),
 * exposure and contrast drifting, and sensor noise drawn anew for every frame; encoded as a phone would (H.264
 * CRF 20, AAC). Two sets: `tuning` (coffee, then chelsea), what the strength's parameters were chosen on, and
 * `judging` (astronaut, then the grayscale camera man), never used for that.
 */
import { runFfmpeg } from '@cairn/media';
import { SHARED_DIR } from '../../../packages/testing/src/shared.js';

const PHOTOS = `${SHARED_DIR}/fixtures/photos`;
export const CAMERA_SETS = {
  tuning: ['coffee.png', 'chelsea.png'],
  judging: ['astronaut.png', 'camera.png'],
} as const;
export type CameraSet = keyof typeof CAMERA_SETS;

/** One shot's filter: input `i` → `[v<i>]`, `frames` frames of width × height at `fps`, sensor noise `noise`. */
function shot(i: number, frames: number, width: number, height: number, fps: number, noise: number): string {
  // The photograph covers 1.25× the frame, so the pan never shows an edge and one of its pixels is 0.8 of the frame's.
  const [w, h] = [Math.round((width * 5) / 8) * 2, Math.round((height * 5) / 8) * 2];
  return (
    `[${i}:v]scale=${w}:${h}:force_original_aspect_ratio=increase,crop=${w}:${h},` +
    `zoompan=z='1.02+0.0008*on':x='(iw-iw/zoom)/2+12*sin(on*0.21+${i})+5*sin(on*0.77)'` +
    `:y='(ih-ih/zoom)/2+9*sin(on*0.17+1)+4*sin(on*0.93+${i})':d=${frames}:s=${width}x${height}:fps=${fps},` +
    `rotate=a='0.003*sin(t*5.1+${i})+0.002*sin(t*11.3)',` +
    `eq=brightness='0.04*sin(t*1.3+${i})':contrast='1+0.05*sin(t*0.7)':eval=frame,` +
    `noise=alls=${noise}:allf=t,setsar=1[v${i}]`
  );
}

/** A camera-like MP4 of `seconds` (two shots, a cut half way), with a tone as its sound. */
export async function cameraClip(
  set: CameraSet,
  options: { seconds: number; width: number; height: number; fps?: number },
): Promise<Buffer> {
  const { seconds, width, height } = options;
  const fps = options.fps ?? 30;
  const half = seconds / 2;
  const frames = Math.round(half * fps);
  const [first, second] = CAMERA_SETS[set];
  return runFfmpeg({
    args: [
      ...['-loop', '1', '-t', String(half), '-i', `${PHOTOS}/${first}`],
      ...['-loop', '1', '-t', String(half), '-i', `${PHOTOS}/${second}`],
      ...['-f', 'lavfi', '-i', 'sine=frequency=330:sample_rate=48000'],
      '-filter_complex',
      `${shot(0, frames, width, height, fps, 7)};${shot(1, frames, width, height, fps, 10)};[v0][v1]concat=n=2:v=1:a=0[v]`,
      ...['-map', '[v]', '-map', '2:a', '-t', String(seconds)],
      ...['-c:v', 'libx264', '-preset', 'fast', '-crf', '20', '-pix_fmt', 'yuv420p', '-c:a', 'aac', '-b:a', '128k'],
      ...['-movflags', 'frag_keyframe+empty_moov', '-f', 'mp4', 'pipe:1'],
    ],
    timeoutMs: 300_000,
  });
}
