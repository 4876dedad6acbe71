import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { runFfmpeg } from '@cairn/media';
import { fingerprintVideo } from '../src/adapters/video-fingerprint.js';
import {
  matchVideo,
  MAX_VIDEO_FRAMES,
  MIN_FRAME_QUALITY,
  MIN_MATCHED_FRACTION,
  MIN_MATCHED_FRAMES,
  nearestFrameDistance,
  streamExtent,
  VIDEO_FRAME_RADIUS,
  VideoFingerprintError,
  type VideoFrameHash,
} from '../src/domain/video.js';
import { HASH_BYTES } from '../src/domain/pdq.js';
import { OWN_PHOTOS, SHARED_PHOTOS } from './support/variants.js';
import { SHARED_DIR } from '../../../packages/testing/src/shared.js';

const photo = (name: string) =>
  /^(astronaut|camera|chelsea|coffee)$/.test(name)
    ? join(SHARED_PHOTOS, `${name}.png`)
    : join(OWN_PHOTOS, `${name}.jpg`);

interface Shot {
  photo: string;
  seconds: number;
  /** A 2× zoom into the centre: a different picture for the hash (and to the eye). */
  zoom?: boolean;
}

/**
 * Slideshows of real photos (hard cuts = real scene changes). Different videos share at most one photo, so a
 * shared shot must not make them match; `b` holds one shot for 8 s (the periodic floor adds frames).
 */
const VIDEOS: Record<string, Shot[]> = {
  a: ['astronaut', 'camera', 'chelsea', 'coffee', 'brick'].map((p) => ({ photo: p, seconds: 2 })),
  b: [
    { photo: 'cell', seconds: 2 },
    { photo: 'clock_motion', seconds: 2 },
    { photo: 'coins', seconds: 8 },
    { photo: 'grass', seconds: 2 },
    { photo: 'hubble_deep_field', seconds: 2 },
  ],
  c: ['moon', 'page', 'retina', 'rocket', 'coffee'].map((p) => ({ photo: p, seconds: 2 })),
  d: [
    { photo: 'grass', seconds: 2 },
    { photo: 'astronaut', seconds: 2, zoom: true },
    { photo: 'moon', seconds: 2 },
    { photo: 'rocket', seconds: 2, zoom: true },
    { photo: 'chelsea', seconds: 2 },
  ],
};

const FRAME =
  'scale=320:240:force_original_aspect_ratio=decrease,pad=320:240:(ow-iw)/2:(oh-ih)/2,setsar=1,fps=10,format=yuv420p';
const X264 = ['-c:v', 'libx264', '-preset', 'veryfast', '-pix_fmt', 'yuv420p'];

async function buildSlideshow(shots: Shot[], out: string): Promise<void> {
  const inputs = shots.flatMap((s) => ['-loop', '1', '-t', String(s.seconds), '-i', photo(s.photo)]);
  const chains = shots.map((s, i) => `[${i}]${s.zoom ? 'crop=iw/2:ih/2,' : ''}${FRAME}[v${i}]`);
  const graph = `${chains.join(';')};${shots.map((_, i) => `[v${i}]`).join('')}concat=n=${shots.length}:v=1:a=0[v]`;
  await runFfmpeg({
    args: [
      '-y',
      ...inputs,
      '-filter_complex',
      graph,
      '-map',
      '[v]',
      ...X264,
      '-crf',
      '23',
      '-movflags',
      '+faststart',
      out,
    ],
    timeoutMs: 60_000,
  });
}

/** Transformed copies: output extension and the ffmpeg arguments between input and output. */
const TRANSFORMS: Record<string, { ext: string; before?: string[]; args: string[] }> = {
  'x264 CRF 35': { ext: 'mp4', args: [...X264, '-crf', '35'] },
  'scaled to 50%': { ext: 'mp4', args: ['-vf', 'scale=iw/2:ih/2', ...X264, '-crf', '23'] },
  'VP8 WebM 200 kb/s': {
    ext: 'webm',
    args: ['-c:v', 'libvpx', '-b:v', '200k', '-deadline', 'realtime', '-cpu-used', '8'],
  },
  'MKV remux': { ext: 'mkv', args: ['-c', 'copy'] },
  'first second trimmed': { ext: 'mp4', before: ['-ss', '1'], args: [...X264, '-crf', '23'] },
};

/** Runs jobs two at a time (the machine's two cores are shared). */
async function inPairs<T>(jobs: Array<() => Promise<T>>): Promise<T[]> {
  const results: T[] = new Array<T>(jobs.length);
  let next = 0;
  const worker = async () => {
    while (next < jobs.length) {
      const i = next++;
      results[i] = await jobs[i]!();
    }
  };
  await Promise.all([worker(), worker()]);
  return results;
}

const summary = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return `min ${s[0]} / median ${s[s.length >> 1]} / max ${s[s.length - 1]} (n=${s.length})`;
};

let dir = '';
const originals = new Map<string, VideoFrameHash[]>();
const copies = new Map<string, Map<string, VideoFrameHash[]>>(); // video → transform → frames

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cairn-video-test-'));
  const names = Object.keys(VIDEOS);
  await inPairs(names.map((n) => () => buildSlideshow(VIDEOS[n]!, join(dir, `${n}.mp4`))));
  const jobs: Array<() => Promise<void>> = [];
  for (const n of names) {
    copies.set(n, new Map());
    jobs.push(async () => void originals.set(n, await fingerprintVideo(await readFile(join(dir, `${n}.mp4`)))));
    Object.entries(TRANSFORMS).forEach(([t, spec], k) => {
      jobs.push(async () => {
        const out = join(dir, `${n}-${k}.${spec.ext}`);
        await runFfmpeg({
          args: ['-y', ...(spec.before ?? []), '-i', join(dir, `${n}.mp4`), ...spec.args, out],
          timeoutMs: 60_000,
        });
        copies.get(n)!.set(t, await fingerprintVideo(await readFile(out)));
      });
    });
  }
  await inPairs(jobs);
}, 120_000);

afterAll(async () => {
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('video fingerprint cairn.pdq-frames.v1', () => {
  it('samples the first frame, every cut and a periodic floor, with timestamps and PDQ hashes', () => {
    const a = originals.get('a')!;
    // Five 2-second shots: the first frame and the four cuts.
    expect(a.map((f) => f.seconds)).toEqual([0, 2, 4, 6, 8]);
    // An 8-second shot at 4..12 s gets a floor frame 4 s after its cut.
    expect(originals.get('b')!.map((f) => f.seconds)).toEqual([0, 2, 4, 8, 12, 14]);
    for (const frames of originals.values()) {
      expect(frames.length).toBeLessThanOrEqual(MAX_VIDEO_FRAMES);
      for (const f of frames) {
        expect(f.bits).toHaveLength(HASH_BYTES);
        expect(f.quality).toBeGreaterThanOrEqual(MIN_FRAME_QUALITY);
      }
    }
  });

  it('matches every transformed copy and no different video (distributions printed for the README)', () => {
    const lines: string[] = [];
    const sameFrames: number[] = [];
    const worst: Array<{ label: string; d: number }> = [];
    const sameVideos: Array<{ label: string; matchedFrames: number; similarity: number; matches: boolean }> = [];
    for (const t of Object.keys(TRANSFORMS)) {
      const ds: number[] = [];
      const sims: number[] = [];
      for (const [n, byTransform] of copies) {
        const q = byTransform.get(t)!;
        for (const f of q) {
          const d = nearestFrameDistance(f, originals.get(n)!);
          ds.push(d);
          worst.push({ label: `${n} ${t} @${f.seconds}s`, d });
        }
        const m = matchVideo(q, originals.get(n)!);
        sims.push(m.similarity);
        sameVideos.push({ label: `${n} ${t}`, ...m });
      }
      sameFrames.push(...ds);
      lines.push(`${t}: nearest-frame distance ${summary(ds)}; video similarity ${summary(sims)}`);
    }
    // Different videos: every ordered pair of originals, and every transformed copy against the other originals.
    const differentFrames: number[] = [];
    const differentVideos: Array<{ label: string; matchedFrames: number; similarity: number; matches: boolean }> = [];
    for (const [n, indexed] of originals) {
      for (const [m, query] of originals) {
        if (m === n) continue;
        differentFrames.push(...query.map((f) => nearestFrameDistance(f, indexed)));
        differentVideos.push({ label: `${m} vs ${n}`, ...matchVideo(query, indexed) });
        for (const [t, q] of copies.get(m)!)
          differentVideos.push({ label: `${m} ${t} vs ${n}`, ...matchVideo(q, indexed) });
      }
    }
    const sharedShot = differentFrames.filter((d) => d <= VIDEO_FRAME_RADIUS).length;
    const otherFrames = differentFrames.filter((d) => d > VIDEO_FRAME_RADIUS);
    lines.push(
      `same video, all transforms: nearest-frame distance ${summary(sameFrames)}; video similarity ${summary(sameVideos.map((v) => v.similarity))}`,
    );
    worst.sort((x, y) => y.d - x.d);
    lines.push(
      `farthest transformed frames: ${worst
        .slice(0, 4)
        .map((w) => `${w.label} ${w.d}`)
        .join('; ')}`,
    );
    lines.push(`frame quality (originals): ${summary([...originals.values()].flat().map((f) => f.quality))}`);
    lines.push(
      `different videos (originals, ordered pairs): nearest-frame distance ${summary(differentFrames)}; ${sharedShot} frames within the radius (shared photos), others ${summary(otherFrames)}`,
    );
    lines.push(
      `different videos (originals and copies vs other originals): video similarity ${summary(differentVideos.map((v) => v.similarity))}, matched frames ${summary(differentVideos.map((v) => v.matchedFrames))}`,
    );
    lines.push(
      `rule: frame radius ${VIDEO_FRAME_RADIUS}, ≥ ${MIN_MATCHED_FRAMES} frames and ≥ ${MIN_MATCHED_FRACTION * 100}% of the query's frames`,
    );
    process.stdout.write(`${lines.join('\n')}\n`);

    expect(sameVideos.filter((v) => !v.matches).map((v) => v.label)).toEqual([]);
    expect(differentVideos.filter((v) => v.matches).map((v) => v.label)).toEqual([]);
    // The shared photos do give single matching frames: the rule, not the radius, keeps those videos apart.
    expect(sharedShot).toBeGreaterThan(0);
  });

  it('a short clip without cuts still yields several frames, so its re-encoded copy is found', async () => {
    const clip = await runFfmpeg({
      args: [
        ...['-f', 'lavfi', '-i', 'testsrc2=size=640x360:rate=25', '-t', '3'],
        ...[...X264, '-crf', '18', '-movflags', 'frag_keyframe+empty_moov', '-f', 'mp4', 'pipe:1'],
      ],
      timeoutMs: 60_000,
    });
    const copy = await runFfmpeg({
      args: ['-i', 'pipe:0', ...X264, '-crf', '28', '-movflags', 'frag_keyframe+empty_moov', '-f', 'mp4', 'pipe:1'],
      input: clip,
      timeoutMs: 60_000,
    });
    const indexed = await fingerprintVideo(clip);
    // A quarter of the 3 s as the floor (0.75 s): frames at 0, 0.76, 1.52, 2.28 (25 fps), where a 4 s floor gave one.
    expect(indexed.length).toBeGreaterThanOrEqual(4);
    expect(matchVideo(await fingerprintVideo(copy), indexed).matches).toBe(true);
  }, 60_000);

  it('samples over the frames’ own extent when the sound runs longer: fragmented MP4, 4 s of frames, 20 s of AAC', async () => {
    const frames = await runFfmpeg({
      args: [
        ...['-f', 'lavfi', '-i', 'testsrc2=size=640x360:rate=25', '-t', '4'],
        ...[...X264, '-crf', '18', '-f', 'matroska', 'pipe:1'],
      ],
      timeoutMs: 60_000,
    });
    // 20 s of AAC as the file's first stream, the frames (copied) second.
    const fragmented = await runFfmpeg({
      args: [
        ...['-i', 'pipe:0', '-f', 'lavfi', '-i', 'sine=frequency=440:duration=20'],
        ...['-map', '1:a:0', '-map', '0:v:0', '-c:a', 'aac', '-c:v', 'copy'],
        ...['-movflags', 'frag_keyframe+empty_moov', '-f', 'mp4', 'pipe:1'],
      ],
      input: frames,
      timeoutMs: 60_000,
    });
    // The container declares 20 s; the frames span 4 s and are sampled as the silent frames' are (a 1 s floor), where
    // the declared duration gave a 4 s floor: one frame, which no copy can match (MIN_MATCHED_FRAMES).
    const indexed = await fingerprintVideo(fragmented);
    const silent = await fingerprintVideo(frames);
    expect(indexed.map((f) => f.seconds)).toEqual(silent.map((f) => f.seconds));
    expect(indexed.length).toBeGreaterThanOrEqual(4);
    expect(indexed.at(-1)!.seconds).toBeLessThan(4);
    // Its re-encoded copy without the sound is found, and the fragmented file is found as a copy of the silent one.
    const copy = await runFfmpeg({
      args: [
        '-i',
        'pipe:0',
        '-an',
        ...X264,
        '-crf',
        '28',
        '-movflags',
        'frag_keyframe+empty_moov',
        '-f',
        'mp4',
        'pipe:1',
      ],
      input: fragmented,
      timeoutMs: 60_000,
    });
    expect(matchVideo(await fingerprintVideo(copy), indexed).matches).toBe(true);
    expect(matchVideo(indexed, silent).matches).toBe(true);
  }, 120_000);

  it('reads a stream’s extent from its packet list: presentation order, time base, packets without a time', () => {
    const list = [
      '#tb 0: 1/12800',
      '#media_type 0: video',
      '0,      -1024,          0,      512,     1511, 0x9750d779',
      '0,       -512,       1024,      512,      951, 0x68dee381, F=0x0',
      '0,          0,        512,      512,      951, 0x68dee381, F=0x0',
      '0,        512, -9223372036854775808,      512,       10, 0x00000001',
    ].join('\n');
    // From pts 0 to 1024 + 512: three frames of 1/25 s.
    expect(streamExtent(list)).toBeCloseTo(0.12, 6);
    expect(streamExtent('#tb 0: 1/25\n')).toBeUndefined();
    expect(streamExtent('0, 0, 0, 1, 10, 0x0\n')).toBeUndefined();
  });

  it('ignores flat frames: a black video matches nothing, not even another black video', async () => {
    const black = await runFfmpeg({
      args: ['-f', 'lavfi', '-i', 'color=c=black:s=320x240:d=3:r=10', ...X264, '-f', 'matroska', 'pipe:1'],
      timeoutMs: 30_000,
    });
    const frames = await fingerprintVideo(black);
    expect(frames.length).toBeGreaterThan(0);
    expect(frames.every((f) => f.quality < MIN_FRAME_QUALITY)).toBe(true);
    expect(matchVideo(frames, frames)).toEqual({ matchedFrames: 0, similarity: 0, matches: false });
  });

  it('refuses non-video, corrupt and oversized input with a typed error', async () => {
    const code = async (bytes: Buffer, options?: { maxBytes: number }) => {
      try {
        await fingerprintVideo(bytes, options);
        return 'fingerprinted';
      } catch (error) {
        expect(error).toBeInstanceOf(VideoFingerprintError);
        return (error as VideoFingerprintError).code;
      }
    };
    const a = await readFile(join(dir, 'a.mp4'));
    // c2pa-rs test file: 1000 nested moov atoms; ffmpeg 4.1 refuses it ("Atoms too deeply nested").
    expect(await code(await readFile(`${SHARED_DIR}/fixtures/c2pa-rs/nested_moov_1000.mp4`))).toBe('undecodable');
    expect(await code(await readFile(photo('astronaut')))).toBe('not_video');
    expect(await code(await readFile(`${SHARED_DIR}/fixtures/c2pa-rs/sample1.wav`))).toBe('not_video');
    // Audio only, in a container that sniffs as video: ffmpeg finds no video stream.
    const audioOnly = await runFfmpeg({
      args: [
        '-i',
        `${SHARED_DIR}/fixtures/c2pa-rs/sample1.wav`,
        '-t',
        '1',
        '-c:a',
        'pcm_s16le',
        '-f',
        'matroska',
        'pipe:1',
      ],
      timeoutMs: 30_000,
    });
    expect(await code(audioOnly)).toBe('not_video');
    expect(await code(Buffer.from('not a video at all, just some words'))).toBe('not_video');
    expect(await code(Buffer.alloc(0))).toBe('not_video');
    const noise = Buffer.alloc(64 * 1024);
    for (let i = 0, x = 1; i < noise.length; i++) noise[i] = (x = (x * 1103515245 + 12345) % 2147483648) >> 16;
    expect(await code(noise)).toBe('undecodable');
    expect(await code(a.subarray(0, 4096))).toMatch(/^(undecodable|no_frames)$/);
    expect(await code(a, { maxBytes: 1024 })).toBe('too_large');
  });
});
