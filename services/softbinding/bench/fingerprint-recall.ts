/**
 * bench:fingerprint-recall: the recall of the video and audio fingerprints on the transforms the watermark benches
 * put copies through (H.264 CRF 28, scale 0.5×, crop 10 %, 24 fps, VP9 WebM, trims; MP3,
 * AAC, Vorbis, Opus, resampling, gain, cuts, noise, speed), with the matching rules the lookup applies
 * (`matchVideo`, `isAudioMatch`: the same decision the index search makes per candidate), and the false matches
 * between different clips. Images are measured by `pnpm bench:lookup` (its recall line), text by
 * services/softbinding/test/text.test.ts (every near-duplicate transform asserted). Ends with `ratio` lines.
 *
 *   pnpm bench:fingerprint-recall        (SECONDS_OF_VIDEO=4, SECONDS_OF_AUDIO=20 by default)
 */
import { readFile } from 'node:fs/promises';
import { decodeAudioMono } from '@cairn/media';
import { fingerprintAudio } from '../src/adapters/audio-fingerprint.js';
import { fingerprintVideo } from '../src/adapters/video-fingerprint.js';
import {
  alignment,
  fingerprintSamples,
  isAudioMatch,
  SAMPLE_RATE,
  type AudioFingerprint,
} from '../src/domain/audio.js';
import { matchVideo, type VideoFrameHash } from '../src/domain/video.js';
import { attacked, AUDIO_ATTACKS, espeakSpeech, recording, withNoise } from '../../../test/support/audio.js';
import { clip, transcoded, type ClipKind } from '../../../test/support/video.js';
import { SHARED_DIR } from '../../../packages/testing/src/shared.js';

const VIDEO_SECONDS = Number(process.env.SECONDS_OF_VIDEO ?? 4);
const AUDIO_SECONDS = Number(process.env.SECONDS_OF_AUDIO ?? 20);

const X264 = (crf: number) => ['-c:v', 'libx264', '-preset', 'veryfast', '-crf', String(crf), '-c:a', 'aac'];
/** The video watermark bench's transforms (services/watermark/bench/watermark-video.ts), x264 at a faster preset. */
const VIDEO_TRANSFORMS: ReadonlyArray<readonly [string, string[]]> = [
  ['H.264 CRF 28', X264(28)],
  ['H.264 CRF 33', X264(33)],
  ['scale 0.5× + CRF 28', ['-vf', 'scale=trunc(iw/4)*2:trunc(ih/4)*2', ...X264(28)]],
  ['crop 10 % + CRF 28', ['-vf', 'crop=trunc(iw*0.45)*2:trunc(ih*0.45)*2', ...X264(28)]],
  ['24 fps + CRF 28', ['-r', '24', ...X264(28)]],
  [
    'VP9 WebM CRF 36',
    ['-c:v', 'libvpx-vp9', '-crf', '36', '-b:v', '0', '-deadline', 'realtime', '-cpu-used', '8', '-c:a', 'libopus'],
  ],
  ['2 s excerpt from 1.3 s + CRF 23', ['-ss', '1.3', '-t', '2', ...X264(23)]],
];
const VIDEO_CLIPS: ReadonlyArray<readonly [ClipKind, number, number]> = [
  ['testsrc2', 640, 360],
  ['mandelbrot', 640, 360],
  ['photo', 640, 360],
];

const table = (header: string[], rows: string[][]) => [
  `| ${header.join(' | ')} |`,
  `|${header.map(() => '---').join('|')}|`,
  ...rows.map((r) => `| ${r.join(' | ')} |`),
];

// Video: each clip's own frames indexed, each copy looked up against every clip.
const videos: Array<{ name: string; frames: VideoFrameHash[]; copies: Map<string, VideoFrameHash[]> }> = [];
for (const [kind, width, height] of VIDEO_CLIPS) {
  const original = await clip(kind, { seconds: VIDEO_SECONDS, width, height, audio: true });
  const copies = new Map<string, VideoFrameHash[]>();
  for (const [name, args] of VIDEO_TRANSFORMS) {
    const format = name.startsWith('VP9') ? ['-f', 'webm'] : [];
    copies.set(name, await fingerprintVideo(await transcoded(original, [...args, ...format])));
  }
  videos.push({
    name: `${kind} ${width}×${height} ${VIDEO_SECONDS} s`,
    // As the index holds them: whole frames and their crops (the lookup searches every row of the asset).
    frames: (await fingerprintVideo(original, { crops: true })).flatMap((f) => [
      f,
      ...(f.crops ?? []).map((c) => ({ seconds: f.seconds, bits: c.bits, quality: c.quality })),
    ]),
    copies,
  });
  console.error(`video ${kind} done`);
}
let videoFound = 0;
let videoTotal = 0;
let videoFalse = 0;
let videoPairs = 0;
const videoRows: string[][] = [];
for (const [name] of VIDEO_TRANSFORMS) {
  const cells: string[] = [];
  let found = 0;
  for (const v of videos) {
    const m = matchVideo(v.copies.get(name)!, v.frames);
    cells.push(`${m.matches ? 'found' : 'miss'} (${m.matchedFrames}/${v.copies.get(name)!.length}, ${m.similarity})`);
    if (m.matches) found++;
    for (const other of videos) {
      if (other === v) continue;
      videoPairs++;
      if (matchVideo(v.copies.get(name)!, other.frames).matches) videoFalse++;
    }
  }
  videoFound += found;
  videoTotal += videos.length;
  videoRows.push([name, ...cells, `${found}/${videos.length}`]);
}

// Audio: each recording indexed as made, each copy looked up against every recording.
const inputs: Array<{ name: string; bytes: Buffer }> = [
  { name: `espeak-ng speech ${AUDIO_SECONDS} s`, bytes: await espeakSpeech(AUDIO_SECONDS, 2) },
  { name: `speech-like ${AUDIO_SECONDS} s`, bytes: await recording('speech', AUDIO_SECONDS, 2) },
  { name: `music ${AUDIO_SECONDS} s`, bytes: await recording('music', AUDIO_SECONDS, 2) },
  { name: 'c2pa-rs sample1.wav 33.5 s', bytes: await readFile(`${SHARED_DIR}/fixtures/c2pa-rs/sample1.wav`) },
];
const AUDIO_TRANSFORMS = [...Object.keys(AUDIO_ATTACKS), 'noise 20 dB SNR', 'speed +5%'];
async function audioCopy(bytes: Buffer, name: string): Promise<AudioFingerprint> {
  if (name === 'noise 20 dB SNR') return fingerprintSamples(withNoise(await decodeAudioMono(bytes, SAMPLE_RATE), 20));
  if (name === 'speed +5%')
    return fingerprintAudio(await attacked(bytes, ['-af', 'asetrate=44100*1.05,aresample=44100', '-f', 'wav']));
  return fingerprintAudio(await attacked(bytes, AUDIO_ATTACKS[name]!));
}
const sounds = await Promise.all(inputs.map(async (i) => ({ ...i, fingerprint: await fingerprintAudio(i.bytes) })));
let audioFound = 0;
let audioTotal = 0;
let audioFalse = 0;
let audioPairs = 0;
const audioRows: string[][] = [];
for (const name of AUDIO_TRANSFORMS) {
  const cells: string[] = [];
  let found = 0;
  for (const s of sounds) {
    let copy: AudioFingerprint;
    try {
      copy = await audioCopy(s.bytes, name);
    } catch (error) {
      cells.push(`refused (${error instanceof Error ? error.name : 'error'})`);
      continue;
    }
    const score = alignment(copy.landmarks, s.fingerprint.landmarks);
    const match = isAudioMatch(score);
    cells.push(`${match ? 'found' : 'miss'} (${score.similarity})`);
    if (match) found++;
    for (const other of sounds) {
      if (other === s) continue;
      audioPairs++;
      if (isAudioMatch(alignment(copy.landmarks, other.fingerprint.landmarks))) audioFalse++;
    }
  }
  audioFound += found;
  audioTotal += sounds.length;
  audioRows.push([name, ...cells, `${found}/${sounds.length}`]);
}

console.log(
  `\nVideo cairn.pdq-frames.v1 (cell: found or miss, matched/query frames, similarity; rule ≥ 2 frames and ≥ 0.3):`,
);
console.log(table(['transform', ...videos.map((v) => v.name), 'recall'], videoRows).join('\n'));
console.log(`video recall ${videoFound}/${videoTotal}; false matches ${videoFalse} of ${videoPairs} copy × other clip`);
console.log(`\nAudio cairn.audio-peaks.v1 (cell: found or miss, aligned share; rule ≥ 20 landmarks and ≥ 0.025):`);
console.log(table(['transform', ...sounds.map((s) => s.name), 'recall'], audioRows).join('\n'));
console.log(`audio recall ${audioFound}/${audioTotal}; false matches ${audioFalse} of ${audioPairs} copy × other clip`);
console.log(`ratio fingerprint_recall_video ${(videoFound / videoTotal).toFixed(3)}`);
console.log(`ratio fingerprint_recall_audio ${(audioFound / audioTotal).toFixed(3)}`);
