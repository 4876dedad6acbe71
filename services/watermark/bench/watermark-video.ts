/**
 * bench:watermark-video: the video watermark (cairn-sync-v2 on every frame) on clips made here with ffmpeg (a moving
 * testsrc2 pattern, a mandelbrot zoom, and the coffee photograph animated with zoompan; 30 fps, with a tone; at 720p,
 * and the pattern and the photo at 480p and 360p, which carry the coarser grid of small frames): luma PSNR, the CRF
 * chosen, detection after each transform a copy goes through, false positives on the unmarked clips and their
 * copies, and speed over the 720p clips: CPU seconds per second of video (this process, whose worker threads mark
 * the frames, and its ffmpeg children: CRF probe, decode, encode) and wall seconds per second of video, each against a
 * same-run baseline, a plain ffmpeg decode and encode of the same clip at the same settings (x264 preset and the CRF
 * the embed chose, audio copied), which is what re-encoding the upload costs without a mark. Wall time is also put
 * against the video's own duration (`ratio video-720p-wall-per-video-second`: ≤ 1 is real time), for the frames alone
 * and for all EmbedVideo does (the frames, then the audio track marked and re-encoded), with the load average before
 * and after: on a shared machine the wall figure is only as good as the quiet it was taken in.
 *
 * Camera-like clips (services/watermark/bench/watermark-video-camera.ts: the real photographs shot handheld, sensor noise, exposure
 * drift, a cut; H.264 CRF 20 as a phone encodes) join them: the `judging` set by default, `tuning` on request.
 *
 *   pnpm bench:watermark-video            (SECONDS_OF_VIDEO=3 by default; BENCH_HEIGHTS=720,480 for some clips)
 *   VIDEO_SETS=bench,tuning,judging       (default: bench,judging)
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { DEFAULT_MEDIA_LIMITS, ffmpegPath, runFfmpeg } from '@cairn/media';
import { createLogger } from '../../../packages/logging/src/index.js';
import { markAudioTrack } from '../src/app/video-audio-track.js';
import { detectVideoMark, markVideo } from '../src/app/video-watermark.js';
import { keyedPayloadFor, payloadHex } from '../src/domain/payload.js';
import { defaultPoolSize, ImageWorkerPool } from '../src/adapters/worker-pool.js';
import { videoEncoderArgs } from '../src/adapters/video-codec.js';
import { clip, transcoded, type ClipKind } from '../../../test/support/video.js';
import { cameraClip, type CameraSet } from './watermark-video-camera.js';
import { vp9Webm } from './video/transcodes.js';
import { mediaCodecs } from '../src/adapters/media-codecs.js';

const SECONDS = Number(process.env.SECONDS_OF_VIDEO ?? 3);
const FPS = 30;
/** Speed is measured on the 720p clips only (the line: real time for 720p on the two cores). */
const SPEED_WIDTH = 1280;
/** BENCH_HEIGHTS=480,360 runs only the clips of those heights (all by default); BENCH_SPEED_ONLY=1 only embeds. */
const HEIGHTS = process.env.BENCH_HEIGHTS?.split(',').map(Number);
type Kind = ClipKind | `camera ${CameraSet}`;
const SETS = (process.env.VIDEO_SETS ?? 'bench,judging').split(',');
const ALL_CLIPS: ReadonlyArray<readonly [Kind, number, number]> = [
  ...(SETS.includes('bench')
    ? ([
        ['testsrc2', 1280, 720],
        ['mandelbrot', 1280, 720],
        ['photo', 1280, 720],
        ['testsrc2', 854, 480],
        ['photo', 854, 480],
        ['testsrc2', 640, 360],
        ['photo', 640, 360],
      ] as const)
    : []),
  ...(['tuning', 'judging'] as const)
    .filter((set) => SETS.includes(set))
    .flatMap((set) =>
      (
        [
          [1280, 720],
          [854, 480],
          [640, 360],
        ] as const
      ).map(([w, h]) => [`camera ${set}`, w, h] as const),
    ),
];
/** A clip of the bench: made with ffmpeg, or camera-like from the photographs. */
const made = (kind: Kind, options: { seconds: number; width: number; height: number; fps: number; audio: true }) =>
  kind.startsWith('camera ')
    ? cameraClip(kind.slice('camera '.length) as CameraSet, options)
    : clip(kind as ClipKind, options);
const SPEED_ONLY = process.env.BENCH_SPEED_ONLY === '1';
const CLIPS = ALL_CLIPS.filter(([, , height]) => !HEIGHTS || HEIGHTS.includes(height));

const key = { kid: 'bench', secret: Uint8Array.from(randomBytes(32)) };
// As the service runs it: one worker per core.
const pool = new ImageWorkerPool({ size: defaultPoolSize() });
await pool.ready();
const deps = { pool, codecs: mediaCodecs, mediaLimits: DEFAULT_MEDIA_LIMITS };
// A running service's workers are warm: one short clip first, untimed, so the first timed clip does not pay for
// compiling the marking code.
await markVideo(deps, await clip('testsrc2', { seconds: 1, width: 1280, height: 720, fps: FPS }), randomBytes(8), key);

const logger = createLogger({ service: 'bench', level: 'warn' });
const load = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
const loadBefore = load();

const cpu = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
};
/** CPU seconds of this process's finished children (the ffmpeg runs): utime + stime fields of /proc/self/stat. */
const childCpu = async () => {
  const fields = (await readFile('/proc/self/stat', 'utf8')).split(') ')[1]!.split(' ');
  return (Number(fields[13]) + Number(fields[14])) / 100;
};

const X264 = (crf: number) => [
  '-c:v',
  'libx264',
  '-preset',
  'medium',
  '-crf',
  String(crf),
  '-c:a',
  'aac',
  '-b:a',
  '96k',
];
const TRANSFORMS: ReadonlyArray<readonly [string, string[]]> = [
  ['none', []],
  ['H.264 CRF 23', X264(23)],
  ['H.264 CRF 28', X264(28)],
  ['H.264 CRF 33', X264(33)],
  // Even sizes (x264 refuses odd ones: half of 854×480 is 427 wide).
  ['scale 0.5× + CRF 28', ['-vf', 'scale=trunc(iw/4)*2:trunc(ih/4)*2', ...X264(28)]],
  ['scale 0.75× + CRF 23', ['-vf', 'scale=trunc(iw*0.375)*2:trunc(ih*0.375)*2', ...X264(23)]],
  ['crop 10 % + CRF 28', ['-vf', 'crop=trunc(iw*0.45)*2:trunc(ih*0.45)*2', ...X264(28)]],
  ['24 fps + CRF 28', ['-r', '24', ...X264(28)]],
  ['VP9 WebM CRF 36', vp9Webm(36, ['-c:a', 'libopus'])],
  ['2 s excerpt from 1.3 s + CRF 23', ['-ss', '1.3', '-t', '2', ...X264(23)]],
];

/**
 * The baseline: the clip decoded and encoded by one ffmpeg as EmbedVideo encodes it (H.264 with EmbedVideo's x264
 * settings at the CRF the embed chose, audio copied, index first), from a file as EmbedVideo reads it; its CPU and
 * wall seconds.
 */
async function plainTranscode(bytes: Buffer, crf: number): Promise<{ cpu: number; wall: number }> {
  const dir = await mkdtemp(join(tmpdir(), 'cairn-bench-video-'));
  try {
    await writeFile(join(dir, 'input.mp4'), bytes);
    const before = await childCpu();
    const wallBefore = performance.now();
    await runFfmpeg({
      args: [
        ...['-i', join(dir, 'input.mp4'), '-map', '0:v:0', '-map', '0:a:0?', '-c:a', 'copy'],
        ...videoEncoderArgs({ mediaType: 'video/mp4' }, crf),
        ...['-movflags', '+faststart', '-f', 'mp4', '-y', join(dir, 'output.mp4')],
      ],
      timeoutMs: 300_000,
    });
    return { cpu: (await childCpu()) - before, wall: (performance.now() - wallBefore) / 1000 };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Luma PSNR of the answer (marked and encoded) against the upload, frame by frame as decoded: what a viewer of the
 * signed file gets (the marked frames' own PSNR is before the encode).
 */
async function answerPsnr(answer: Buffer, upload: Buffer): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'cairn-bench-video-'));
  try {
    await writeFile(join(dir, 'answer.mp4'), answer);
    await writeFile(join(dir, 'upload.mp4'), upload);
    const log = await runFfmpegStderr([
      ...['-i', join(dir, 'answer.mp4'), '-i', join(dir, 'upload.mp4')],
      ...['-lavfi', '[0:v]setpts=N[a];[1:v]setpts=N[b];[a][b]psnr', '-f', 'null', '-'],
    ]);
    return /PSNR y:([\d.]+)/.exec(log)?.[1]?.replace(/(\.\d).*/, '$1') ?? '?';
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** ffmpeg's log of a run (the psnr filter prints its summary there). */
function runFfmpegStderr(args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(ffmpegPath(), ['-hide_banner', '-nostdin', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
    let log = '';
    child.stderr.on('data', (chunk: Buffer) => (log += chunk.toString('utf8')));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(log) : reject(new Error(`ffmpeg exited with ${code}`))));
  });
}

const header = ['clip', 'PSNR dB', 'answer vs upload dB', 'CRF', ...TRANSFORMS.map(([name]) => name)];
const lines = [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`];
let markCpu = 0;
let ffmpegCpu = 0;
let frames = 0;
let embedWall = 0;
/** Wall of the audio track's marking and re-encode after the frames (EmbedVideo's second step), 720p clips. */
let audioTrackWall = 0;
let audioTrackCpu = 0;
let baselineCpu = 0;
let baselineWall = 0;
let falsePositives = 0;
let unmarkedReads = 0;
let speedClips = 0;

for (const [kind, width, height] of CLIPS) {
  const original = await made(kind, { seconds: SECONDS, width, height, fps: FPS, audio: true });
  const payload = keyedPayloadFor(key.secret, `w_bench_${kind}_${height}`);
  const cpuBefore = cpu();
  const childBefore = await childCpu();
  const wallBefore = performance.now();
  const marked = await markVideo(deps, original, payload, key);
  if (width === SPEED_WIDTH) {
    embedWall += (performance.now() - wallBefore) / 1000;
    markCpu += cpu() - cpuBefore;
    ffmpegCpu += (await childCpu()) - childBefore;
    frames += marked.frames;
    speedClips++;
    const trackCpuBefore = cpu() + (await childCpu());
    const trackWallBefore = performance.now();
    await markAudioTrack({ ...deps, logger }, marked.encoded, marked.mediaType, payload, key);
    audioTrackWall += (performance.now() - trackWallBefore) / 1000;
    audioTrackCpu += cpu() + (await childCpu()) - trackCpuBefore;
    const baseline = await plainTranscode(original, marked.crf);
    baselineCpu += baseline.cpu;
    baselineWall += baseline.wall;
  }
  const cells: string[] = [];
  for (const [name, args] of SPEED_ONLY ? [] : TRANSFORMS) {
    const copy = name === 'none' ? marked.encoded : await transcoded(marked.encoded, args);
    const found = await detectVideoMark(deps, copy, [key]);
    const read = found.outcome ? payloadHex(found.outcome.detection.payload) : null;
    cells.push(read === payloadHex(payload) ? `read (${found.atSeconds} s)` : read ? '**WRONG**' : 'miss');
    // The unmarked clip as made and after CRF 28 and VP9: nothing may be read.
    if (name === 'none' || name === 'H.264 CRF 28' || name.startsWith('VP9')) {
      const plain = name === 'none' ? original : await transcoded(original, args);
      unmarkedReads++;
      if ((await detectVideoMark(deps, plain, [key])).outcome) falsePositives++;
    }
  }
  lines.push(
    `| ${kind} ${width}×${height} ${SECONDS} s | ${marked.psnrDb.toFixed(1)} | ${await answerPsnr(marked.encoded, original)} | ${marked.crf} | ${cells.join(' | ')} |`,
  );
  console.error(lines.at(-1));
}
await pool.close(0);

console.log(lines.join('\n'));
console.log(
  `\nfalse positives: ${falsePositives} of ${unmarkedReads} unmarked files (each up to 12 one-second windows read, ` +
    `each on every grid area)`,
);
const videoSeconds = speedClips * SECONDS;
// Speed is over the 720p clips; a run without them prints none.
if (speedClips > 0) {
  const embedCpu = (markCpu + ffmpegCpu) / videoSeconds;
  console.log(
    `speed (${speedClips} clips of 1280×720 at ${FPS} fps, ${pool.size} workers): marking ` +
      `${((markCpu / frames) * 1000).toFixed(1)} ms CPU per frame in this process (workers and frame piping); ` +
      `ffmpeg (CRF probe, decode, encode) ${((ffmpegCpu / frames) * 1000).toFixed(1)} ms CPU per frame; together ` +
      `${embedCpu.toFixed(2)} CPU seconds per second of video (real time on the 2 cores needs ≤ 2.00), wall ` +
      `${(embedWall / videoSeconds).toFixed(2)} s per video second; the plain ffmpeg decode and encode of the same ` +
      `clips at the same settings: ${(baselineCpu / videoSeconds).toFixed(2)} CPU s and ` +
      `${(baselineWall / videoSeconds).toFixed(2)} s wall per video second`,
  );
  const wallPerSecond = embedWall / videoSeconds;
  const fullWallPerSecond = (embedWall + audioTrackWall) / videoSeconds;
  const fullCpuPerSecond = embedCpu + audioTrackCpu / videoSeconds;
  console.log(
    `wall against real time (720p${FPS}): frames ${wallPerSecond.toFixed(2)} s per video second ` +
      `(${embedCpu.toFixed(2)} CPU s); with the audio track as EmbedVideo marks it ${fullWallPerSecond.toFixed(2)} s ` +
      `(${fullCpuPerSecond.toFixed(2)} CPU s); ≤ 1 is real time; load average (1, 5, 15 min) before ${loadBefore}, ` +
      `after ${load()}`,
  );
  console.log(`ratio video-720p-wall-per-video-second ${wallPerSecond.toFixed(3)}`);
  console.log(`ratio video-720p-embed-wall-per-video-second ${fullWallPerSecond.toFixed(3)}`);
  console.log(`ratio video-720p-embed-cpu-per-video-second ${fullCpuPerSecond.toFixed(3)}`);
  console.log(`ratio video_embed_cpu_per_video_second ${embedCpu.toFixed(3)}`);
  console.log(`ratio video_embed_cpu_vs_plain_transcode ${((markCpu + ffmpegCpu) / baselineCpu).toFixed(3)}`);
  console.log(`ratio video_mark_cpu_vs_real_time ${(markCpu / videoSeconds).toFixed(3)}`);
  console.log(`ratio video_mark_cpu_ms_per_frame ${((markCpu / frames) * 1000).toFixed(2)}`);
  console.log(`ratio video_embed_wall_per_video_second ${(embedWall / videoSeconds).toFixed(3)}`);
  console.log(`ratio video_embed_wall_vs_plain_transcode ${(embedWall / baselineWall).toFixed(3)}`);
}
