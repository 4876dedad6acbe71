import { AUDIO_WM } from './cairn-audio-wm-v1.js';
import { scaleTo } from './contrast-qim.js';
import { resampleSignal } from './resample.js';

/** What an audio algorithm gives the embedding glue: its mark for a 16 kHz mono host (v1 and v2 alike). */
export interface AudioMarker {
  markSignal(host: Float32Array, payload: Uint8Array, minSnrDb?: number): { mark: Float32Array; snrDb: number };
}

/** Interleaved float samples at their own rate and channel count. */
export interface PcmAudio {
  readonly samples: Float32Array;
  readonly sampleRate: number;
  readonly channels: number;
}

/** The mean of the channels at 16 kHz: what the mark is computed on (a detector's downmix differs only by a gain). */
export function analysisMix(audio: PcmAudio): Float32Array {
  const frames = Math.floor(audio.samples.length / audio.channels);
  const mix = new Float32Array(frames);
  for (let i = 0; i < frames; i++) {
    let sum = 0;
    for (let c = 0; c < audio.channels; c++) sum += audio.samples[i * audio.channels + c]!;
    mix[i] = sum / audio.channels;
  }
  return resampleSignal(mix, audio.sampleRate, AUDIO_WM.sampleRate);
}

/**
 * Marks `audio` in place: the mark is computed on the 16 kHz mix, brought to the audio's rate and added equally
 * to every channel (any downmix carries it whole; the stereo image is untouched), then scaled so that the SNR
 * against the upload itself (all channels, full band) and against its 16 kHz mix are both at least `minSnrDb`.
 * Answers the lower of the two.
 */
export function embedAudioMark(
  watermark: AudioMarker,
  audio: PcmAudio,
  payload: Uint8Array,
  minSnrDb: number = AUDIO_WM.targetSnrDb,
): { snrDb: number } {
  const mix = analysisMix(audio);
  const { mark } = watermark.markSignal(mix, payload, 0);
  const frames = Math.floor(audio.samples.length / audio.channels);
  const native = resampleSignal(mark, AUDIO_WM.sampleRate, audio.sampleRate, frames);
  let signal = 0;
  let noise = 0;
  for (let i = 0; i < audio.samples.length; i++) signal += audio.samples[i]! * audio.samples[i]!;
  for (let i = 0; i < frames; i++) noise += audio.channels * native[i]! * native[i]!;
  if (noise === 0) return { snrDb: Infinity };
  // The whole mark is in the mix's band and in every channel alike: against the 16 kHz mix (no side channel, nothing
  // above 8 kHz) it is up to a few dB louder than against the upload on wide stereo music, so both are held.
  let mixSignal = 0;
  let mixNoise = 0;
  for (let i = 0; i < mix.length; i++) {
    mixSignal += mix[i]! * mix[i]!;
    mixNoise += mark[i]! * mark[i]!;
  }
  const measured = Math.min(10 * Math.log10(signal / noise), 10 * Math.log10(mixSignal / mixNoise));
  const snr = measured < minSnrDb ? scaleTo(native, measured, minSnrDb) : measured;
  for (let i = 0; i < frames; i++) {
    const m = native[i]!;
    for (let c = 0; c < audio.channels; c++)
      audio.samples[i * audio.channels + c] = audio.samples[i * audio.channels + c]! + m;
  }
  return { snrDb: snr };
}

/** SNR in dB of `marked` against `original` (same length), over all samples. */
export function snrDb(original: Float32Array, marked: Float32Array): number {
  let signal = 0;
  let noise = 0;
  for (let i = 0; i < original.length; i++) {
    signal += original[i]! * original[i]!;
    const d = marked[i]! - original[i]!;
    noise += d * d;
  }
  return noise === 0 ? Infinity : 10 * Math.log10(signal / noise);
}
