/**
 * bench:watermark-audio-keys: cairn-audio-wm-v3's detection under many fixed keys, on the two lines one random key
 * per run (bench:watermark-audio) rarely shows: the synthetic music's 3 s excerpt, and white noise at 20 dB SNR
 * on each recording in several draws. Every copy is read twice in the same run, by v3's detection as it is and
 * without its sync-calibrated decodes and longer lists (`calibrated: []`, `closeSyncZ: Infinity`: what v3 read
 * before them; marks are the same), so the
 * counts compare the two on the same copies. Key i is SHA-256("cairn bench audio key i"): the keys a run missed
 * are named and another run reproduces them. Also: the false-positive estimate of each (checks a read makes per
 * key) and detection speed on unmarked audio (CPU, one core, the two alternated). Ends with `ratio` lines.
 *
 *   pnpm bench:watermark-audio-keys     (EXCERPT_KEYS=160 keys 0..159 for the excerpt; NOISE_KEYS=20, DRAWS=3;
 *                                        FIRST_KEY=0 to start elsewhere; takes minutes)
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { DEFAULT_MEDIA_LIMITS } from '@cairn/media';
import { decodeAudioForEmbedding, encodeMarkedAudio } from '../src/adapters/audio-codec.js';
import { embedAudioMark } from '../src/domain/audio/apply.js';
import { audioPayloadFor } from '../src/domain/audio/cairn-audio-wm-v1.js';
import { AUDIO_WM_V3, AudioWatermarkV3 } from '../src/domain/audio/cairn-audio-wm-v3.js';
import {
  checksPerRead,
  ContrastAnalysis,
  ContrastQimMark,
  type ContrastQimSpec,
} from '../src/domain/audio/contrast-qim.js';
import { attacked, AUDIO_ATTACKS, espeakSpeech, mono16k, recording, withNoise } from '../../../test/support/audio.js';
import { SHARED_DIR } from '../../../packages/testing/src/shared.js';

const SECONDS = 20;
const FIRST_KEY = Number(process.env.FIRST_KEY ?? 0);
const EXCERPT_KEYS = Number(process.env.EXCERPT_KEYS ?? 160);
const NOISE_KEYS = Number(process.env.NOISE_KEYS ?? 20);
const DRAWS = Number(process.env.DRAWS ?? 3);

const keyOf = (i: number) => Uint8Array.from(createHash('sha256').update(`cairn bench audio key ${i}`).digest());
const cpu = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
};

/** v3's detection as it is, and as it read before the sync-calibrated decodes and the longer lists (the same marks). */
const VARIANTS: ReadonlyArray<{ name: 'before' | 'after'; spec: ContrastQimSpec }> = [
  { name: 'before', spec: { ...AUDIO_WM_V3, calibrated: [], closeSyncZ: Infinity } },
  { name: 'after', spec: AUDIO_WM_V3 },
];

const inputs: ReadonlyArray<{ name: string; bytes: () => Promise<Buffer> }> = [
  { name: 'espeak-ng speech', bytes: () => espeakSpeech(SECONDS, 2) },
  { name: 'speech-like', bytes: () => recording('speech', SECONDS, 2) },
  { name: 'music', bytes: () => recording('music', SECONDS, 2) },
  { name: 'c2pa-rs sample1.wav', bytes: () => readFile(`${SHARED_DIR}/fixtures/c2pa-rs/sample1.wav`) },
];

/** Per line and variant: copies read with the right payload, copies tried, and the misses' names (key[/draw]). */
const lines = new Map<string, Map<string, { read: number; tried: number; missed: string[] }>>();
function tally(line: string, variant: string, copy: string, ok: boolean): void {
  const perLine = lines.get(line) ?? new Map<string, { read: number; tried: number; missed: string[] }>();
  lines.set(line, perLine);
  const t = perLine.get(variant) ?? { read: 0, tried: 0, missed: [] };
  perLine.set(variant, t);
  t.tried++;
  if (ok) t.read++;
  else t.missed.push(copy);
}
function readBoth(line: string, copy: string, key: Uint8Array, payload: Uint8Array, samples: Float32Array): void {
  for (const { name, spec } of VARIANTS) {
    const found = new ContrastQimMark(spec, key).detect(samples);
    tally(line, name, copy, found !== null && Buffer.from(found.payload).equals(Buffer.from(payload)));
  }
}

const unmarked: Float32Array[] = [];
for (const input of inputs) {
  const bytes = await input.bytes();
  unmarked.push(await mono16k(bytes));
  const decoded = await decodeAudioForEmbedding(bytes, DEFAULT_MEDIA_LIMITS);
  const keys = input.name === 'music' ? Math.max(EXCERPT_KEYS, NOISE_KEYS) : NOISE_KEYS;
  for (let i = FIRST_KEY; i < FIRST_KEY + keys; i++) {
    const key = keyOf(i);
    const payload = audioPayloadFor(key, `w_bench_${input.name}`);
    const samples = decoded.samples.slice();
    const { sampleRate, channels } = decoded.format;
    embedAudioMark(new AudioWatermarkV3(key), { samples, sampleRate, channels }, payload);
    const marked = await encodeMarkedAudio(samples, decoded.format);
    if (input.name === 'music' && i < FIRST_KEY + EXCERPT_KEYS) {
      const excerpt = await mono16k(await attacked(marked, AUDIO_ATTACKS['3 s excerpt']!));
      readBoth('music 3 s excerpt', String(i), key, payload, excerpt);
    }
    if (i < FIRST_KEY + NOISE_KEYS) {
      const copy = await mono16k(marked);
      for (let d = 1; d <= DRAWS; d++)
        readBoth(`${input.name} noise 20 dB`, `${i}/${d}`, key, payload, withNoise(copy, 20, d));
    }
  }
  process.stderr.write(`${input.name}: done\n`);
}

// Unmarked audio, each clip read by both variants under a fresh fixed key, the order alternated: nothing is
// found, so every scale, weight and calibrated decode is paid for.
const spent = { before: 0, after: 0 };
let seconds = 0;
let reports = 0;
const clips = unmarked.flatMap((s) => [s, withNoise(s, 20, 99)]);
for (const [c, samples] of clips.entries()) {
  const key = keyOf(1_000_000 + c);
  const order = c % 2 === 0 ? VARIANTS : [...VARIANTS].reverse();
  for (const { name, spec } of order) {
    const started = cpu();
    if (new ContrastQimMark(spec, key).decode(new ContrastAnalysis(spec, samples))) reports++;
    spent[name] += cpu() - started;
  }
  seconds += Math.min(samples.length / 16_000, AUDIO_WM_V3.detectMaxSeconds);
}

console.log(`| line | before | after | missed before | missed after |`);
console.log(`|---|---|---|---|---|`);
for (const [line, perLine] of lines) {
  const b = perLine.get('before')!;
  const a = perLine.get('after')!;
  console.log(
    `| ${line} | ${b.read}/${b.tried} | ${a.read}/${a.tried} | ${b.missed.join(' ') || '—'} | ${a.missed.join(' ') || '—'} |`,
  );
}
console.log();
for (const { name, spec } of VARIANTS)
  console.log(
    `${name}: ${checksPerRead(spec).toFixed(1)} keyed checks a read per key (on average); false positives ≤ ${(20 * checksPerRead(spec) * 2 ** -spec.checkBits).toExponential(1)} per minute per key (20 reads of 3 s a minute); detect ${(seconds / spent[name]).toFixed(0)}× real time on unmarked audio`,
  );
console.log(`unmarked: ${clips.length} clips, ${seconds.toFixed(0)} s, ${reports} reports`);
console.log();
const slug = (t: string) => t.replace(/[^A-Za-z0-9]+/g, '_').replace(/_$/, '');
for (const [line, perLine] of lines)
  for (const [variant, t] of perLine)
    console.log(`ratio ${variant}_read_${slug(line)} ${(t.read / t.tried).toFixed(3)}`);
for (const { name, spec } of VARIANTS) {
  console.log(
    `ratio ${name}_false_positives_per_minute ${(20 * checksPerRead(spec) * 2 ** -spec.checkBits).toExponential(2)}`,
  );
  console.log(`ratio ${name}_detect_unmarked_x_realtime ${(seconds / spent[name]).toFixed(1)}`);
}
console.log(`ratio unmarked_reports ${reports}`);
