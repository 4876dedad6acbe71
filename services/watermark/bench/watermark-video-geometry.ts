/**
 * bench:watermark-video-geometry — the video mark's own content check (app/detect-video.ts): the copy's first second,
 * placed on the embedding grid by the geometry its mark was read under, against the first second the mark was
 * embedded in (domain/video/content.ts). Camera-like clips made from the fixture photographs (test/support/
 * camera-clip.ts, the clips bench:watermark-video-content uses), each marked under one key:
 *
 *  - honest copies: each clip after every transform of HONEST_VIDEO_COPIES; a copy whose frame mark does not read
 *    at all is counted apart (the soft-binding check and the sound decide those);
 *  - transplants: the mark lifted from each signed clip (its frames minus the original's) and laid onto every other
 *    clip: named 0 % is the line.
 *
 * `--set tuning|judging|both` (default both): tuning is astronaut and camera under a steady hand; judging is
 * chelsea, coffee, and the c2pa-rs cloud and XCA (blurred ribbons) photographs under a quicker hand with a cut.
 * The thresholds are the image check's (content-registration.ts), chosen on images: no set here tuned them.
 * Prints one `ratio` line per transform and the transplant line.
 */
import { randomBytes } from 'node:crypto';
import { DEFAULT_MEDIA_LIMITS } from '@cairn/media';
import { SHARED_DIR } from '../../../packages/testing/src/shared.js';
import {
  cameraClip,
  HONEST_VIDEO_COPIES,
  QUICK_HAND,
  STEADY_HAND,
  transplanted,
  type Motion,
} from '../../../test/support/camera-clip.js';
import { transcoded } from '../../../test/support/video.js';
import { mediaCodecs } from '../src/adapters/media-codecs.js';
import { ImageWorkerPool } from '../src/adapters/worker-pool.js';
import { detectVideoMark, markVideo } from '../src/app/video-watermark.js';
import { compareContent } from '../src/domain/image/content-registration.js';
import { keyedPayloadFor } from '../src/domain/payload.js';

const FIXTURES = `${SHARED_DIR}/fixtures/`;
const key = { kid: 'bench-geometry', secret: Uint8Array.from(randomBytes(32)) };
const pool = new ImageWorkerPool({ size: 2 });
const deps = { pool, codecs: mediaCodecs, mediaLimits: DEFAULT_MEDIA_LIMITS };

interface Clip {
  name: string;
  original: Buffer;
  signed: Buffer;
  content: Uint8Array;
}

async function clips(set: 'tuning' | 'judging'): Promise<Clip[]> {
  const photos = `${FIXTURES}photos/`;
  const made: Array<[string, string[], Motion]> =
    set === 'tuning'
      ? ['astronaut.png', 'camera.png'].map((p) => [p, [photos + p], STEADY_HAND])
      : [
          photos + 'chelsea.png',
          photos + 'coffee.png',
          `${FIXTURES}c2pa-rs/cloud.jpg`,
          `${FIXTURES}c2pa-rs/XCA.jpg`,
        ].map((p) => [p.split('/').pop()!, [p, p], QUICK_HAND]);
  const out: Clip[] = [];
  for (const [i, [name, sources, motion]] of made.entries()) {
    const original = await cameraClip(sources, { motion, seed: i * 3, secondsEach: sources.length === 1 ? 6 : 3 });
    const marked = await markVideo(deps, original, keyedPayloadFor(key.secret, `w_bench_${set}_${i}`), key);
    out.push({ name, original, signed: Buffer.from(marked.encoded), content: marked.content });
  }
  return out;
}

/** 'named', 'refused' (read, content not the asset's) or 'unread' (no frame mark), with the correlation. */
async function check(bytes: Buffer, content: Uint8Array): Promise<{ verdict: string; correlation: number }> {
  const found = await detectVideoMark(deps, bytes, [key]);
  const registered = found.outcome?.registered;
  if (!registered) return { verdict: 'unread', correlation: Number.NaN };
  const comparison = compareContent(registered, content);
  return { verdict: comparison?.consistent ? 'named' : 'refused', correlation: comparison?.correlation ?? 0 };
}

async function bench(set: 'tuning' | 'judging'): Promise<void> {
  const all = await clips(set);
  console.log(`# ${set} set: ${all.map((c) => c.name).join(', ')}`);
  for (const [label, args, container] of HONEST_VIDEO_COPIES) {
    const tally = { named: 0, refused: 0, unread: 0 };
    const detail: string[] = [];
    for (const clip of all) {
      const copy = await transcoded(clip.signed, container === 'webm' ? [...args, '-f', 'webm'] : args);
      const { verdict, correlation } = await check(copy, clip.content);
      tally[verdict as keyof typeof tally]++;
      detail.push(`${clip.name} ${verdict}${Number.isNaN(correlation) ? '' : ` ${correlation.toFixed(2)}`}`);
    }
    const read = tally.named + tally.refused;
    console.log(
      `ratio ${set} honest "${label}" named ${tally.named}/${read} of those whose mark read (${tally.unread} unread)  (${detail.join(', ')})`,
    );
  }
  let tried = 0;
  let named = 0;
  let highest = -1;
  for (const victim of all)
    for (const host of all) {
      if (host === victim) continue;
      const { verdict, correlation } = await check(
        await transplanted(victim.original, victim.signed, host.original),
        victim.content,
      );
      if (verdict === 'unread') continue;
      tried++;
      if (verdict === 'named') named++;
      highest = Math.max(highest, correlation);
    }
  console.log(
    `ratio ${set} transplant named ${named}/${tried} = ${(named / Math.max(1, tried)).toFixed(3)}  (highest correlation ${highest.toFixed(2)})`,
  );
}

const setArg = process.argv.indexOf('--set');
const which = setArg > 0 ? process.argv[setArg + 1] : 'both';
try {
  if (which === 'tuning' || which === 'both') await bench('tuning');
  if (which === 'judging' || which === 'both') await bench('judging');
} finally {
  await pool.close();
}
