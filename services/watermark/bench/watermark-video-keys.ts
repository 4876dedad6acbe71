/**
 * bench:watermark-video-keys: the video mark's hardest lines under many fixed keys, which one random key per run
 * (bench:watermark-video) cannot show: small clips halved and re-encoded with H.264 CRF 28 (640×360 → 320×180, the
 * smallest grid's chips at their narrowest), and on request the other transforms. Each clip is marked as EmbedVideo
 * marks it under key i, transformed, and read; then the unmarked clip, transformed the same way, is read under the
 * same key (false positives). Key i is SHA-256("cairn bench video key i"): the keys a run missed are named and
 * another run reproduces them.
 *
 *   pnpm bench:watermark-video-keys     (KEYS=16 keys from FIRST_KEY=0; BENCH_HEIGHTS=360 by default, 480 too;
 *                                        TRANSFORMS=halved by default, or any of halved,crf33,crop,fps24,vp9,excerpt)
 */
import { createHash } from 'node:crypto';
import { DEFAULT_MEDIA_LIMITS } from '@cairn/media';
import { detectVideoMark, markVideo } from '../src/app/video-watermark.js';
import { keyedPayloadFor, payloadHex } from '../src/domain/payload.js';
import { defaultPoolSize, ImageWorkerPool } from '../src/adapters/worker-pool.js';
import { clip, transcoded, type ClipKind } from '../../../test/support/video.js';
import { mediaCodecs } from '../src/adapters/media-codecs.js';
import { vp9Webm } from './video/transcodes.js';

const KEYS = Number(process.env.KEYS ?? 16);
const FIRST_KEY = Number(process.env.FIRST_KEY ?? 0);
const HEIGHTS = (process.env.BENCH_HEIGHTS ?? '360').split(',').map(Number);
const WIDTH_OF: Readonly<Record<number, number>> = { 360: 640, 480: 854, 720: 1280 };
const KINDS: ReadonlyArray<ClipKind> = ['testsrc2', 'photo'];
const SECONDS = 3;
const X264 = (crf: number) => ['-c:v', 'libx264', '-preset', 'medium', '-crf', String(crf)];
/** The transforms of bench:watermark-video, by short name (the sound is left out: these clips have none). */
const ALL_TRANSFORMS: Readonly<Record<string, { name: string; args: string[] }>> = {
  halved: { name: 'halved + CRF 28', args: ['-vf', 'scale=trunc(iw/4)*2:trunc(ih/4)*2', ...X264(28)] },
  crf33: { name: 'CRF 33', args: X264(33) },
  crop: { name: 'crop 10 % + CRF 28', args: ['-vf', 'crop=trunc(iw*0.45)*2:trunc(ih*0.45)*2', ...X264(28)] },
  fps24: { name: '24 fps + CRF 28', args: ['-r', '24', ...X264(28)] },
  vp9: { name: 'VP9 CRF 36', args: vp9Webm(36, []) },
  excerpt: { name: '2 s excerpt + CRF 23', args: ['-ss', '1.3', '-t', '2', ...X264(23)] },
};
const TRANSFORMS = (process.env.TRANSFORMS ?? 'halved').split(',').map((short) => {
  const transform = ALL_TRANSFORMS[short];
  if (!transform) throw new Error(`TRANSFORMS: no transform ${short} (${Object.keys(ALL_TRANSFORMS).join(', ')})`);
  return { short, ...transform };
});

const keyOf = (i: number) => ({
  kid: `bench-${i}`,
  secret: Uint8Array.from(createHash('sha256').update(`cairn bench video key ${i}`).digest()),
});

const pool = new ImageWorkerPool({ size: defaultPoolSize() });
await pool.ready();
const deps = { pool, codecs: mediaCodecs, mediaLimits: DEFAULT_MEDIA_LIMITS };

const lines = [
  '| clip | transform | read | keys missed | unmarked copy read (false positives) |',
  '|---|---|---|---|---|',
];
const ratios: string[] = [];
for (const height of HEIGHTS) {
  const width = WIDTH_OF[height];
  if (!width) throw new Error(`BENCH_HEIGHTS: no clip of height ${height} (360, 480 or 720)`);
  for (const kind of KINDS) {
    const original = await clip(kind, { seconds: SECONDS, width, height, fps: 30, audio: false });
    const tallies = TRANSFORMS.map((transform) => ({ transform, reads: 0, falsePositives: 0, missed: [] as number[] }));
    const plainCopies = await Promise.all(TRANSFORMS.map(({ args }) => transcoded(original, args)));
    for (let i = FIRST_KEY; i < FIRST_KEY + KEYS; i++) {
      const key = keyOf(i);
      const payload = keyedPayloadFor(key.secret, `w_bench_${kind}_${height}`);
      const marked = await markVideo(deps, original, payload, key);
      for (const [t, tally] of tallies.entries()) {
        const found = await detectVideoMark(deps, await transcoded(marked.encoded, tally.transform.args), [key]);
        const read = found.outcome ? payloadHex(found.outcome.detection.payload) : null;
        if (read && read !== payloadHex(payload)) throw new Error(`key ${i}: a wrong payload was read (${read})`);
        if (read) tally.reads++;
        else tally.missed.push(i);
        if ((await detectVideoMark(deps, plainCopies[t]!, [key])).outcome) tally.falsePositives++;
      }
    }
    for (const { transform, reads, falsePositives, missed } of tallies) {
      lines.push(
        `| ${kind} ${width}×${height} ${SECONDS} s | ${transform.name} | ${reads}/${KEYS} | ${missed.join(', ') || '—'} | ${falsePositives}/${KEYS} |`,
      );
      console.error(lines.at(-1));
      ratios.push(`ratio video_${transform.short}_read_${kind}_${height}p ${(reads / KEYS).toFixed(3)}`);
    }
  }
}
await pool.close(0);
console.log(`keys ${FIRST_KEY}..${FIRST_KEY + KEYS - 1}\n${lines.join('\n')}\n${ratios.join('\n')}`);
