/**
 * bench:watermark-audio: cairn-audio-wm-v1 measured on recordings made here (espeak-ng speech; ffmpeg: a
 * speech-like voice and a music-like mix; stereo 44.1 kHz) and the c2pa-rs sample WAV (8 kHz stereo): SNR against the upload, detection
 * after each transform a copy goes through, false positives on unmarked audio, and speed on one core (CPU
 * time, so a busy machine does not flatter or spoil it). Ends with `ratio <name> <value>` lines.
 *
 *   pnpm bench:watermark-audio            (SECONDS_OF_AUDIO=20 by default; KEYS=3 keys for the false-positive run)
 */
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { DEFAULT_MEDIA_LIMITS, runFfmpeg } from '@cairn/media';
import { decodeAudioForEmbedding, encodeMarkedAudio } from '../../services/watermark/src/adapters/audio-codec.js';
import { embedAudioMark, snrDb } from '../../services/watermark/src/domain/audio/apply.js';
import {
  analyseAudio,
  AUDIO_WM,
  audioPayloadFor,
  AudioWatermark,
} from '../../services/watermark/src/domain/audio/cairn-audio-wm-v1.js';
import {
  attacked,
  AUDIO_ATTACKS,
  espeakSpeech,
  mono16k,
  recording,
  withNoise,
} from '../../services/watermark/test/support/audio.js';
import { SHARED_DIR } from '../../packages/testing/src/shared.js';

const SECONDS = Number(process.env.SECONDS_OF_AUDIO ?? 20);
const SAMPLE = `${SHARED_DIR}/fixtures/c2pa-rs/sample1.wav`;

const key = Uint8Array.from(randomBytes(32));
const watermark = new AudioWatermark(key);

const cpu = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
};

/** Transforms beyond the shared list: noise is added to the decoded samples, speed by resampling the playback rate. */
const TRANSFORMS = [...Object.keys(AUDIO_ATTACKS), 'noise 20 dB SNR', 'speed +5%'] as const;

async function transformed(marked: Buffer, name: string): Promise<Float32Array> {
  if (name === 'noise 20 dB SNR') return withNoise(await mono16k(marked), 20);
  if (name === 'speed +5%')
    return mono16k(await attacked(marked, ['-af', 'asetrate=44100*1.05,aresample=44100', '-f', 'wav']));
  return mono16k(await attacked(marked, AUDIO_ATTACKS[name]!));
}

interface Row {
  readonly name: string;
  readonly snr: number;
  readonly cells: Map<string, number | null>;
}

const rows: Row[] = [];
let embedCpu = 0;
let detectCpu = 0;
let embedSeconds = 0;
let detectSeconds = 0;

const inputs: Array<{ name: string; bytes: Buffer }> = [
  { name: `espeak-ng speech ${SECONDS} s stereo 44.1k`, bytes: await espeakSpeech(SECONDS, 2) },
  { name: `speech-like ${SECONDS} s stereo 44.1k`, bytes: await recording('speech', SECONDS, 2) },
  { name: `music ${SECONDS} s stereo 44.1k`, bytes: await recording('music', SECONDS, 2) },
  { name: 'c2pa-rs sample1.wav 33.5 s stereo 8k', bytes: await readFile(SAMPLE) },
];

for (const input of inputs) {
  const payload = audioPayloadFor(key, `w_bench_${input.name}`);
  const decoded = await decodeAudioForEmbedding(input.bytes, DEFAULT_MEDIA_LIMITS);
  const original = decoded.samples.slice();
  const started = cpu();
  embedAudioMark(
    watermark,
    { samples: decoded.samples, sampleRate: decoded.format.sampleRate, channels: decoded.format.channels },
    payload,
  );
  embedCpu += cpu() - started;
  embedSeconds += decoded.format.seconds;
  const snr = snrDb(original, decoded.samples);
  const marked = await encodeMarkedAudio(decoded.samples, decoded.format);
  const cells = new Map<string, number | null>();
  for (const name of ['none', ...TRANSFORMS]) {
    const samples = name === 'none' ? await mono16k(marked) : await transformed(marked, name);
    const t = cpu();
    const found = watermark.detect(samples);
    detectCpu += cpu() - t;
    detectSeconds += Math.min(samples.length / AUDIO_WM.sampleRate, AUDIO_WM.detectMaxSeconds);
    cells.set(name, found && Buffer.from(found.payload).equals(Buffer.from(payload)) ? found.confidence : null);
  }
  rows.push({ name: input.name, snr, cells });
  process.stderr.write(`${input.name}: done\n`);
}

// False positives: unmarked audio (the recordings, the sample, synthetic tones and noises, and their
// transforms), each read under several keys. A report needs the 32-bit keyed check to pass on one of
// `candidates` decodes per key.
const KEYS = Number(process.env.KEYS ?? 3);
const keys = Array.from({ length: KEYS }, () => new AudioWatermark(Uint8Array.from(randomBytes(32))));
const unmarked: Float32Array[] = [];
for (const input of inputs) {
  unmarked.push(await mono16k(input.bytes));
  for (const name of ['MP3 128k', 'resample 16 kHz', '3 s excerpt'])
    unmarked.push(await mono16k(await attacked(input.bytes, AUDIO_ATTACKS[name]!)));
}
for (const source of [
  'sine=f=1000',
  'sine=f=440',
  'anoisesrc=c=white:a=0.2',
  'anoisesrc=c=pink:a=0.3',
  'anoisesrc=c=brown:a=0.5',
  'aevalsrc=exprs=0.3*sin(2*PI*(300+200*t)*t)',
]) {
  unmarked.push(
    await mono16k(
      await runFfmpeg({ args: ['-f', 'lavfi', '-i', `${source}:d=30`, '-ar', '44100', '-f', 'wav', 'pipe:1'] }),
    ),
  );
}
let falseReports = 0;
let decodes = 0;
let unmarkedSeconds = 0;
for (const samples of unmarked) {
  const analysis = analyseAudio(samples);
  unmarkedSeconds += samples.length / AUDIO_WM.sampleRate;
  for (const k of keys) {
    decodes += AUDIO_WM.candidates;
    if (k.decode(analysis)) falseReports++;
  }
}
// A detection over a file of up to detectMaxSeconds is one fold: `candidates` decodes per key. Counted per
// 3 s window instead (20 a minute), as if every excerpt of a minute were read on its own: an upper bound.
const fpPerMinute = 20 * AUDIO_WM.candidates * 2 ** -AUDIO_WM.checkBits;

const cell = (v: number | null | undefined) => (v === null || v === undefined ? 'miss' : v.toFixed(2));
const header = ['audio', 'SNR dB', 'none', ...TRANSFORMS];
console.log(`| ${header.join(' | ')} |`);
console.log(`|${header.map(() => '---').join('|')}|`);
for (const row of rows)
  console.log(
    `| ${row.name} | ${row.snr.toFixed(1)} | ${['none', ...TRANSFORMS].map((t) => cell(row.cells.get(t))).join(' | ')} |`,
  );
console.log();
console.log(
  `false positives: ${falseReports} reports in ${decodes} decodes (${unmarked.length} unmarked clips, ${unmarkedSeconds.toFixed(0)} s, ${KEYS} keys); estimate ≤ ${fpPerMinute.toExponential(1)} per minute`,
);
console.log(
  `speed (CPU, one core): embed ${(embedSeconds / embedCpu).toFixed(0)}× real time, detect ${(detectSeconds / detectCpu).toFixed(0)}× real time`,
);
console.log();
console.log(`ratio snr_min_db ${Math.min(...rows.map((r) => r.snr)).toFixed(1)}`);
for (const t of ['none', ...TRANSFORMS]) {
  const detected = rows.filter((r) => r.cells.get(t) !== null).length;
  const name = t
    .replace('−', 'minus ')
    .replace('+', 'plus ')
    .replace(/[^A-Za-z0-9]+/g, '_')
    .replace(/_$/, '');
  console.log(`ratio detected_${name} ${(detected / rows.length).toFixed(2)}`);
}
console.log(`ratio false_reports ${falseReports}`);
console.log(`ratio false_positives_per_minute ${fpPerMinute.toExponential(2)}`);
console.log(`ratio embed_x_realtime ${(embedSeconds / embedCpu).toFixed(1)}`);
console.log(`ratio detect_x_realtime ${(detectSeconds / detectCpu).toFixed(1)}`);
