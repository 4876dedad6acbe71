import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { decodeAudioMono, runFfmpeg } from '@cairn/media';

/** ffmpeg's output arguments for 16-bit PCM WAV with `channels` channels on stdout. */
const wavToStdout = (channels: number): string[] => [
  '-ac',
  String(channels),
  '-c:a',
  'pcm_s16le',
  '-f',
  'wav',
  'pipe:1',
];

/**
 * Test recordings made here with ffmpeg (no espeak-ng or sox on this machine): a speech-like voice (a glottal
 * buzz with a wandering pitch through three formants, in syllables and pauses) and a music-like mix (a
 * sawtooth chord, a stepping melody and hi-hat noise bursts, with an echo). Deterministic, so a result is reproducible.
 */
export const RECORDINGS = {
  speech:
    "aevalsrc=exprs='(mod(t*(120+25*sin(3*t)),1)-0.5)*pow(abs(sin(7.8*t)),2)*gt(sin(1.3*t)+0.2*sin(5*t),-0.6)':s=44100:d=DUR," +
    'highpass=f=80,lowpass=f=5000,equalizer=f=700:t=q:w=2:g=10,equalizer=f=1200:t=q:w=2:g=8,equalizer=f=2600:t=q:w=2:g=6,volume=0.5',
  music:
    "aevalsrc=exprs='0.12*(mod(t*110,1)-0.5)+0.08*(mod(t*138.6,1)-0.5)+0.08*(mod(t*164.8,1)-0.5)+0.1*(mod(t*(440+110*floor(mod(t*4,4))),1)-0.5)*pow(abs(sin(PI*t*4)),0.5)+0.15*(random(0)-0.5)*exp(-25*mod(t,0.25))':s=44100:d=DUR," +
    'lowpass=f=9000,aecho=0.8:0.6:60:0.25,volume=0.9',
} as const;

export type RecordingName = keyof typeof RECORDINGS;

/** A recording as a 44.1 kHz WAV, `channels` channels (stereo duplicates it), 16-bit. */
export async function recording(name: RecordingName, seconds: number, channels = 1): Promise<Buffer> {
  const filter = RECORDINGS[name].replace('DUR', String(seconds));
  // A little pink noise under every recording: real rooms and mixes are never digitally silent between sounds.
  return runFfmpeg({
    args: [
      '-f',
      'lavfi',
      '-i',
      filter,
      '-f',
      'lavfi',
      '-i',
      `anoisesrc=c=pink:r=44100:a=0.003:d=${seconds}:s=7`,
      '-filter_complex',
      'amix=inputs=2:duration=first,volume=2',
      ...wavToStdout(channels),
    ],
  });
}

/** Transformations a copy goes through on its way back to a verifier, as ffmpeg output options. */
export const AUDIO_ATTACKS: Record<string, string[]> = {
  'MP3 128k': ['-c:a', 'libmp3lame', '-b:a', '128k', '-f', 'mp3'],
  'MP3 64k mono': ['-ac', '1', '-c:a', 'libmp3lame', '-b:a', '64k', '-f', 'mp3'],
  'AAC 96k (M4A)': ['-c:a', 'aac', '-b:a', '96k', '-f', 'ipod'],
  'Vorbis q3': ['-c:a', 'libvorbis', '-q:a', '3', '-f', 'ogg'],
  'Opus 64k': ['-c:a', 'libopus', '-b:a', '64k', '-f', 'ogg'],
  'resample 16 kHz': ['-ar', '16000', '-f', 'wav'],
  'resample 48 kHz': ['-ar', '48000', '-f', 'wav'],
  'gain −6 dB': ['-af', 'volume=-6dB', '-f', 'wav'],
  'gain +6 dB': ['-af', 'volume=6dB', '-c:a', 'pcm_f32le', '-f', 'wav'],
  'cut 1.23 s at start, 0.7 s at end': [
    '-af',
    'atrim=start=1.23,asetpts=PTS-STARTPTS,areverse,atrim=start=0.7,areverse',
    '-f',
    'wav',
  ],
  '3 s excerpt': ['-af', 'atrim=start=2.345:duration=3,asetpts=PTS-STARTPTS', '-f', 'wav'],
};

/** `bytes` through one attack (ffmpeg), then decoded as the detector reads it: 16 kHz mono float. */
export async function attacked(bytes: Buffer, args: string[]): Promise<Buffer> {
  // ipod (M4A) needs a seekable output: written through a temporary file by ffmpeg's own muxer options.
  const movflags = args.includes('ipod') ? ['-movflags', 'frag_keyframe+empty_moov'] : [];
  return runFfmpeg({ args: ['-i', 'pipe:0', ...args, ...movflags, 'pipe:1'], input: bytes });
}

/** White noise added at `snrDb` below the signal's own power (per sample), as 16 kHz mono. */
export function withNoise(samples: Float32Array, snrDb: number, seed = 1): Float32Array {
  let power = 0;
  for (const s of samples) power += s * s;
  power /= Math.max(1, samples.length);
  const sigma = Math.sqrt(power / 10 ** (snrDb / 10));
  let state = seed >>> 0;
  const uniform = () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return (state + 0.5) / 4294967296;
  };
  const out = new Float32Array(samples.length);
  for (let i = 0; i < samples.length; i++)
    out[i] = samples[i]! + sigma * Math.sqrt(-2 * Math.log(uniform())) * Math.cos(2 * Math.PI * uniform());
  return out;
}

export const mono16k = (bytes: Buffer): Promise<Float32Array> => decodeAudioMono(bytes, 16_000);

/**
 * `video` with `audio` (any file ffmpeg reads) as its only sound, encoded as the container's usual codec (AAC 128k in
 * MP4, Opus 96k in WebM), the video stream copied, as long as the shorter of the two.
 */
export async function withSoundtrack(video: Buffer, audio: Buffer, container: 'mp4' | 'webm' = 'mp4'): Promise<Buffer> {
  const dir = await mkdtemp(join(tmpdir(), 'cairn-soundtrack-'));
  try {
    await writeFile(join(dir, 'video'), video);
    await writeFile(join(dir, 'audio'), audio);
    return await runFfmpeg({
      args: [
        '-i',
        join(dir, 'video'),
        '-i',
        join(dir, 'audio'),
        '-map',
        '0:v:0',
        '-map',
        '1:a:0',
        '-c:v',
        'copy',
        ...(container === 'webm'
          ? ['-c:a', 'libopus', '-b:a', '96k', '-ar', '48000', '-shortest', '-f', 'webm']
          : ['-c:a', 'aac', '-b:a', '128k', '-shortest', '-movflags', 'frag_keyframe+empty_moov', '-f', 'mp4']),
        'pipe:1',
      ],
      timeoutMs: 120_000,
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const SPOKEN =
  'Content provenance lets anyone check where a recording came from, who made it and with which tool. ' +
  'The mark is repeated through the whole file, so any excerpt of three seconds carries the full message, ' +
  'and a copy that lost its manifest still names the asset it was made from.';

/**
 * Real synthesized speech: espeak-ng (a Debian package: `source tools/dev/system-packages.sh; ensure_system_packages
 * espeak-ng`) reading a fixed text, as a 44.1 kHz WAV of `seconds` (the text looped), `channels` channels, 16-bit.
 */
export async function espeakSpeech(seconds: number, channels = 1): Promise<Buffer> {
  const dir = await mkdtemp(join(tmpdir(), 'cairn-espeak-'));
  try {
    const voice = join(dir, 'voice.wav');
    await promisify(execFile)('espeak-ng', ['-v', 'en-us', '-s', '160', '-w', voice, SPOKEN]).catch(
      (error: unknown) => {
        throw new Error(`espeak-ng failed (is it installed? tools/dev/system-packages.sh): ${String(error)}`);
      },
    );
    return await runFfmpeg({
      args: ['-stream_loop', '-1', '-i', voice, '-t', String(seconds), '-ar', '44100', ...wavToStdout(channels)],
    });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
