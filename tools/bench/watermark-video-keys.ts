/**
 * bench:watermark-video-keys: the video mark's hardest line under many fixed keys, which one random key per run
 * (bench:watermark-video) cannot show: small clips halved and re-encoded with H.264 CRF 28 (640×360 → 320×180, the
 * smallest grid's chips at their narrowest). Each clip is marked as EmbedVideo marks it under key i, halved, and
 * read; then the unmarked clip, halved the same way, is read under the same key (false positives). Key i is
 * SHA-256("cairn bench video key i"): the keys a run missed are named and another run reproduces them.
 *
 *   pnpm bench:watermark-video-keys     (KEYS=16 keys from FIRST_KEY=0; BENCH_HEIGHTS=360 by default, 480 too)
 */
import { createHash } from 'node:crypto';
import { DEFAULT_MEDIA_LIMITS } from '@cairn/media';
import { detectVideoMark, markVideo } from '../../services/watermark/src/app/video-watermark.js';
import { keyedPayloadFor, payloadHex } from '../../services/watermark/src/domain/payload.js';
import { defaultPoolSize, ImageWorkerPool } from '../../services/watermark/src/adapters/worker-pool.js';
import { clip, transcoded, type ClipKind } from '../../services/watermark/test/support/video.js';

const KEYS = Number(process.env.KEYS ?? 16);
const FIRST_KEY = Number(process.env.FIRST_KEY ?? 0);
const HEIGHTS = (process.env.BENCH_HEIGHTS ?? '360').split(',').map(Number);
const WIDTH_OF: Readonly<Record<number, number>> = { 360: 640, 480: 854, 720: 1280 };
const KINDS: ReadonlyArray<ClipKind> = ['testsrc2', 'photo'];
const SECONDS = 3;
const HALVED_CRF_28 = [
  '-vf',
  'scale=trunc(iw/4)*2:trunc(ih/4)*2',
  '-c:v',
  'libx264',
  '-preset',
  'medium',
  '-crf',
  '28',
];

const keyOf = (i: number) => ({
  kid: `bench-${i}`,
  secret: Uint8Array.from(createHash('sha256').update(`cairn bench video key ${i}`).digest()),
});

const pool = new ImageWorkerPool({ size: defaultPoolSize() });
await pool.ready();
const deps = { pool, mediaLimits: DEFAULT_MEDIA_LIMITS };

const lines = [
  '| clip | halved + CRF 28 read | keys missed | unmarked halved copy read (false positives) |',
  '|---|---|---|---|',
];
const ratios: string[] = [];
for (const height of HEIGHTS) {
  const width = WIDTH_OF[height];
  if (!width) throw new Error(`BENCH_HEIGHTS: no clip of height ${height} (360, 480 or 720)`);
  for (const kind of KINDS) {
    const original = await clip(kind, { seconds: SECONDS, width, height, fps: 30, audio: false });
    const plainHalved = await transcoded(original, HALVED_CRF_28);
    let reads = 0;
    let falsePositives = 0;
    const missed: number[] = [];
    for (let i = FIRST_KEY; i < FIRST_KEY + KEYS; i++) {
      const key = keyOf(i);
      const payload = keyedPayloadFor(key.secret, `w_bench_${kind}_${height}`);
      const marked = await markVideo(deps, original, payload, key);
      const found = await detectVideoMark(deps, await transcoded(marked.encoded, HALVED_CRF_28), [key]);
      const read = found.outcome ? payloadHex(found.outcome.detection.payload) : null;
      if (read && read !== payloadHex(payload)) throw new Error(`key ${i}: a wrong payload was read (${read})`);
      if (read) reads++;
      else missed.push(i);
      if ((await detectVideoMark(deps, plainHalved, [key])).outcome) falsePositives++;
    }
    lines.push(
      `| ${kind} ${width}×${height} ${SECONDS} s | ${reads}/${KEYS} | ${missed.join(', ') || '—'} | ${falsePositives}/${KEYS} |`,
    );
    console.error(lines.at(-1));
    ratios.push(`ratio video_halved_crf28_read_${kind}_${height}p ${(reads / KEYS).toFixed(3)}`);
  }
}
await pool.close(0);
console.log(`keys ${FIRST_KEY}..${FIRST_KEY + KEYS - 1}\n${lines.join('\n')}\n${ratios.join('\n')}`);
