import sharp from 'sharp';
import { runFfmpeg } from '@cairn/media';
import { wavOf as wavFile } from '@cairn/testing';

const RATE = 8000;
const TABLE = 4096;
const SINE = (() => {
  const t = new Float32Array(TABLE);
  for (let i = 0; i < TABLE; i++) t[i] = Math.sin((2 * Math.PI * i) / TABLE);
  return t;
})();

/** Mono 16-bit PCM samples as a WAV file (8 kHz unless told). */
export function wavOf(samples: Float32Array, rate = RATE): Buffer {
  return wavFile(samples, rate);
}

/**
 * A photo played as a spectrogram (additive synthesis: columns are time, rows are log-spaced partials, pixel
 * brightness their loudness): distinct, structured test audio from real content, one clip per photo. A sine
 * wavetable with integer phase keeps Math.* out of the sample loop (slow in jest's VM).
 */
export async function sonify(photo: Buffer, seconds = 8): Promise<Buffer> {
  const ROWS = 40;
  // Each photo gets its own tuning and tempo (from its bytes), as different recordings have: clips sharing one
  // frequency grid and one column clock would agree on landmarks by construction, not by content.
  let seed = 0;
  for (let i = 0; i < photo.length; i += 997) seed = (seed * 31 + photo[i]!) >>> 0;
  const base = 140 + (seed % 40);
  const perCol = 900 + ((seed >>> 8) % 300);
  const COLS = Math.floor((seconds * RATE) / perCol);
  const { data } = await sharp(photo)
    .greyscale()
    .resize(COLS, ROWS, { fit: 'fill' })
    .raw()
    .toBuffer({ resolveWithObject: true });
  const steps = new Uint32Array(ROWS);
  for (let r = 0; r < ROWS; r++)
    steps[r] = Math.round((base * Math.pow(3400 / base, r / (ROWS - 1)) * TABLE * 65536) / RATE);
  const out = new Float32Array(COLS * perCol);
  const phase = new Uint32Array(ROWS);
  for (let c = 0; c < COLS; c++) {
    const amp = new Float32Array(ROWS);
    for (let r = 0; r < ROWS; r++) {
      const v = data[(ROWS - 1 - r) * COLS + c]! / 255;
      amp[r] = v * v * v * 0.08; // contrast: bright pixels dominate, as peaks do in music
    }
    for (let i = 0; i < perCol; i++) {
      let s = 0;
      for (let r = 0; r < ROWS; r++) {
        phase[r] = (phase[r]! + steps[r]!) >>> 0;
        s += amp[r]! * SINE[(phase[r]! >>> 16) & (TABLE - 1)]!;
      }
      out[c * perCol + i] = s;
    }
  }
  return wavOf(out);
}

const ff = (args: string[]) => (input: Buffer) => runFfmpeg({ args: ['-i', 'pipe:0', ...args, 'pipe:1'], input });

/** Re-encodings and edits a copy of a signed clip goes through. */
export const AUDIO_TRANSFORMS: Record<string, (b: Buffer) => Promise<Buffer>> = {
  mp3_64k: ff(['-codec:a', 'libmp3lame', '-b:a', '64k', '-f', 'mp3']),
  mp3_32k: ff(['-codec:a', 'libmp3lame', '-b:a', '32k', '-f', 'mp3']),
  ogg_q2: ff(['-codec:a', 'libvorbis', '-q:a', '2', '-f', 'ogg']),
  resample_44k_minus8db: ff(['-ar', '44100', '-af', 'volume=-8dB', '-f', 'wav']),
  pink_noise: (b) =>
    runFfmpeg({
      args: [
        '-i',
        'pipe:0',
        '-filter_complex',
        'anoisesrc=c=pink:a=0.02:d=60:r=8000[n];[0:a][n]amix=inputs=2:duration=first',
        '-f',
        'wav',
        'pipe:1',
      ],
      input: b,
    }),
  delayed_and_trimmed: ff(['-af', 'adelay=137|137,atrim=start=1.5', '-f', 'wav']),
};
