import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runFfmpeg } from '@cairn/media';

/**
 * Camera-like clips made from still photographs (there is no real camera video here): a handheld shot of each photo
 * — a slow zoom, a pan with sub-pixel jitter, sensor noise drawn afresh every frame, exposure drift — 960×540 at
 * 30 fps, H.264 in MP4, with a cut from one photo to the next when given several.
 */
export interface Motion {
  /** Zoom at the start and its growth over 180 frames. */
  zoom: number;
  zoomGrowth: number;
  /** Pan amplitude (source pixels at 1920 wide) and period (frames); jitter amplitude (source pixels). */
  pan: number;
  period: number;
  jitter: number;
  /** ffmpeg noise strength (temporal: new every frame). */
  noise: number;
}

export const STEADY_HAND: Motion = { zoom: 1.15, zoomGrowth: 0.1, pan: 40, period: 23, jitter: 3, noise: 6 };
/** Faster than the steady hand: a wider zoom, a pan about three times as fast, more noise. */
export const QUICK_HAND: Motion = { zoom: 1.25, zoomGrowth: 0.2, pan: 120, period: 40, jitter: 1.5, noise: 9 };
/**
 * A violent shake: every frame jumps several pixels from the last (adjacent frames 4–46 bits apart, as far as the
 * lookup radius): beyond what the content check is specified for (bench:watermark-video-content measures it).
 */
export const SHAKY_HAND: Motion = { zoom: 1.25, zoomGrowth: 0.2, pan: 160, period: 11, jitter: 5, noise: 9 };

function shot(motion: Motion, seed: number): string {
  const z = `${motion.zoom}+${motion.zoomGrowth}*on/180`;
  const x = `iw/2-(iw/zoom/2)+${motion.pan}*sin(on/${motion.period}+${seed})+${motion.jitter}*sin(on*1.7+${seed})`;
  const y = `ih/2-(ih/zoom/2)+${motion.pan * 0.6}*cos(on/${motion.period + 8}+${seed})+${motion.jitter}*cos(on*2.3)`;
  return (
    `scale=1920:-2,zoompan=z='${z}':x='${x}':y='${y}':d=1:s=960x540:fps=30,` +
    `noise=alls=${motion.noise}:allf=t,eq=brightness='0.03*sin(t*1.3+${seed})':eval=frame,setsar=1`
  );
}

/** A clip of `photos`, `secondsEach` per photo, as MP4 bytes. */
export async function cameraClip(
  photos: readonly string[],
  { motion, seed, secondsEach }: { motion: Motion; seed: number; secondsEach: number },
): Promise<Buffer> {
  const dir = await mkdtemp(join(tmpdir(), 'cairn-camera-'));
  try {
    const out = join(dir, 'clip.mp4');
    const inputs = photos.flatMap((p) => ['-loop', '1', '-t', String(secondsEach), '-i', p]);
    const graph =
      photos.map((_, i) => `[${i}:v]${shot(motion, seed + i)}[s${i}]`).join(';') +
      `;${photos.map((_, i) => `[s${i}]`).join('')}concat=n=${photos.length}:v=1:a=0,format=yuv420p[v]`;
    await runFfmpeg({
      args: [...inputs, '-filter_complex', graph, '-map', '[v]', '-c:v', 'libx264', '-crf', '18', '-y', out],
      timeoutMs: 300_000,
    });
    return await readFile(out);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * The perfect-copy attack on a video: the mark lifted from a signed clip (its frames minus the original's) and
 * added to another clip of the same size and length, with the right key's signal and none of the content.
 */
export async function transplanted(original: Buffer, signed: Buffer, host: Buffer): Promise<Buffer> {
  const dir = await mkdtemp(join(tmpdir(), 'cairn-transplant-'));
  try {
    const paths = ['original.mp4', 'signed.mp4', 'host.mp4'].map((n) => join(dir, n));
    await Promise.all([writeFile(paths[0]!, original), writeFile(paths[1]!, signed), writeFile(paths[2]!, host)]);
    const out = join(dir, 'forged.mp4');
    const graph = "[1:v][0:v]blend=all_expr='A-B+128'[mark];[2:v][mark]blend=all_expr='A+B-128',format=yuv420p[v]";
    await runFfmpeg({
      args: [
        ...paths.flatMap((p) => ['-i', p]),
        '-filter_complex',
        graph,
        '-map',
        '[v]',
        '-c:v',
        'libx264',
        '-crf',
        '18',
        '-y',
        out,
      ],
      timeoutMs: 300_000,
    });
    return await readFile(out);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * The copies a content check must name as the asset (label, ffmpeg output options, container): a re-encode, a
 * halving, 10 % crops central and off two sides, a frame-rate change, VP9, and the three at once.
 */
export const HONEST_VIDEO_COPIES: ReadonlyArray<readonly [string, string[], 'mp4' | 'webm']> = [
  ['CRF 28', ['-c:v', 'libx264', '-crf', '28'], 'mp4'],
  ['0.5×', ['-vf', 'scale=trunc(iw/4)*2:-2', '-c:v', 'libx264', '-crf', '23'], 'mp4'],
  ['crop 10 % (central)', ['-vf', 'crop=trunc(iw*0.9/2)*2:trunc(ih*0.9/2)*2', '-c:v', 'libx264', '-crf', '23'], 'mp4'],
  [
    'crop 10 % (two sides)',
    ['-vf', 'crop=trunc(iw*0.9/2)*2:trunc(ih*0.9/2)*2:0:0', '-c:v', 'libx264', '-crf', '23'],
    'mp4',
  ],
  ['24 fps', ['-r', '24', '-c:v', 'libx264', '-crf', '23'], 'mp4'],
  ['VP9', ['-c:v', 'libvpx-vp9', '-crf', '34', '-b:v', '0', '-deadline', 'realtime', '-cpu-used', '8'], 'webm'],
  [
    '0.5× + crop 10 % + CRF 28',
    ['-vf', 'crop=trunc(iw*0.9/2)*2:trunc(ih*0.9/2)*2,scale=trunc(iw/4)*2:-2', '-c:v', 'libx264', '-crf', '28'],
    'mp4',
  ],
];
