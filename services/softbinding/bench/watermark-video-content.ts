/**
 * bench:watermark-video-content — the content check that guards a video watermark's lead (soft-binding
 * compareVideoContent), both sides, on camera-like clips made here from the real fixture photographs (there is no
 * real camera video on this machine): a handheld shot (slow zoom, a pan with sub-pixel jitter, sensor noise drawn
 * afresh every frame, exposure drift), 960 px wide, H.264, with a cut to a second photo in the judging set.
 *
 *  - honest copies: each clip's indexed frames (whole and crops, as the index stores them) against its own copy
 *    after each transform line (CRF 28, 0.5×, central 10 % crop, 10 % off two sides, 24 fps, VP9): named 100 %
 *    is the line;
 *  - transplants: a mark stamped onto other content names the asset only if this check passes, so each clip's
 *    frames are compared with every other clip (other photos, the same camera motion — content similar in kind —
 *    and those clips after CRF 28): named 0 % is the line. The clips are compared unmarked (the check hashes
 *    whole frames, where the mark is a faint signal); the HTTP test (test/content-check.test.ts) runs the same
 *    two sides on a marked clip, through signing and verifying.
 *
 * Sets: `tuning` (astronaut and camera, a steady hand: what the crops, the sampling rate and the vote were chosen
 * on) and `judging` (chelsea, coffee, and the c2pa-rs earth and ribbons photographs, a quicker hand, a cut between two framings of each photo; never tuned
 * on); `--set tuning|judging|both` (default both). `--set shaky`: the judging photos under a violent shake (every
 * frame jumps several pixels), outside what the check is specified for, measured to say so.
 * Prints one `ratio` line per transform and the transplant line.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ffmpegPath } from '@cairn/media';
import { SHARED_DIR } from '../../../packages/testing/src/shared.js';
import {
  cameraClip,
  HONEST_VIDEO_COPIES,
  QUICK_HAND,
  SHAKY_HAND,
  STEADY_HAND,
  type Motion,
} from '../../../test/support/camera-clip.js';
import { fingerprintVideo, sampleVideo } from '../src/adapters/video-fingerprint.js';
import { compareVideoContent, frameRows, indexedFrames, type IndexedVideoFrame } from '../src/domain/video.js';

const run = promisify(execFile);
const SHARED = `${SHARED_DIR}/fixtures/`;

async function ffmpeg(args: string[]): Promise<void> {
  await run(ffmpegPath(), ['-hide_banner', '-loglevel', 'error', '-nostdin', '-y', ...args], { maxBuffer: 1 << 20 });
}

/** What the index holds for a signed clip, read back as the content check reads it. */
async function indexed(path: string): Promise<IndexedVideoFrame[]> {
  return indexedFrames(frameRows(await fingerprintVideo(await readFile(path), { crops: true })));
}

async function compare(index: IndexedVideoFrame[], path: string) {
  const sampled = await sampleVideo(await readFile(path));
  return compareVideoContent(index, sampled.frames, sampled.spanSeconds);
}

interface Clip {
  name: string;
  path: string;
  index: IndexedVideoFrame[];
}

type SetName = 'tuning' | 'judging' | 'shaky';

async function clips(set: SetName, dir: string): Promise<Clip[]> {
  const photos = `${SHARED}photos/`;
  const made: Array<[string, string[], Motion]> = [];
  if (set === 'tuning') {
    for (const p of ['astronaut.png', 'camera.png']) made.push([p, [photos + p], STEADY_HAND]);
  } else {
    // Camera photographs only, each distinct: C.jpg and CA.jpg are one flat gradient (no camera content, and the
    // same picture twice), E-sig-CA.jpg is XCA.jpg in colour.
    const pool = [
      photos + 'chelsea.png',
      photos + 'coffee.png',
      `${SHARED}c2pa-rs/cloud.jpg`,
      `${SHARED}c2pa-rs/XCA.jpg`,
    ];
    // Each judging clip cuts between two framings of its photo (the second shot is another seed of the motion):
    // clips share no picture, so a transplant's host is unrelated content of the same kind.
    for (const path of pool)
      made.push([path.split('/').pop()!, [path, path], set === 'shaky' ? SHAKY_HAND : QUICK_HAND]);
  }
  const out: Clip[] = [];
  for (const [i, [name, sources, motion]] of made.entries()) {
    const path = join(dir, `${set}-${i}.mp4`);
    await writeFile(
      path,
      await cameraClip(sources, { motion, seed: i * 3, secondsEach: sources.length === 1 ? 6 : 3 }),
    );
    out.push({ name, path, index: await indexed(path) });
  }
  return out;
}

async function bench(set: SetName, dir: string): Promise<void> {
  const all = await clips(set, dir);
  console.log(`# ${set} set: ${all.map((c) => `${c.name} (${c.index.length} indexed frames)`).join(', ')}`);
  const copies = new Map<string, string[]>();
  for (const [label, args, ext] of HONEST_VIDEO_COPIES) {
    let named = 0;
    const detail: string[] = [];
    for (const [i, clip] of all.entries()) {
      const out = join(dir, `${set}-${i}-${label.replace(/[^a-z0-9]+/gi, '_')}.${ext}`);
      await ffmpeg(['-i', clip.path, ...args, out]);
      if (label === 'CRF 28') copies.set(clip.path, [out]);
      const c = await compare(clip.index, out);
      if (c.consistent) named++;
      detail.push(`${c.matched}/${c.compared}`);
    }
    console.log(
      `ratio ${set} honest "${label}" named ${named}/${all.length} = ${(named / all.length).toFixed(3)}  (frames ${detail.join(' ')})`,
    );
  }
  // Transplants: every other clip (and its CRF 28 copy) against each clip's index.
  let tried = 0;
  let named = 0;
  let mostMatched = 0;
  for (const victim of all)
    for (const host of all) {
      if (host === victim) continue;
      for (const path of [host.path, ...(copies.get(host.path) ?? [])]) {
        const c = await compare(victim.index, path);
        tried++;
        if (c.consistent) named++;
        mostMatched = Math.max(mostMatched, c.compared === 0 ? 0 : c.matched / c.compared);
      }
    }
  console.log(
    `ratio ${set} transplant named ${named}/${tried} = ${(named / tried).toFixed(3)}  (most frames matched ${(mostMatched * 100).toFixed(0)} %)`,
  );
}

const setArg = process.argv.indexOf('--set');
const which = setArg > 0 ? process.argv[setArg + 1] : 'both';
const dir = await mkdtemp(join(tmpdir(), 'cairn-bench-content-'));
try {
  if (which === 'tuning' || which === 'both') await bench('tuning', dir);
  if (which === 'judging' || which === 'both') await bench('judging', dir);
  if (which === 'shaky') await bench('shaky', dir);
} finally {
  await rm(dir, { recursive: true, force: true });
}
