// Small WAV uploads for tests that need audio but not a recording.
import { wavOf } from '@cairn/testing';

/** A mono 16-bit PCM WAV (16 kHz) of `seconds` of a 440 Hz tone, made in memory. */
export function toneWav(seconds: number): Buffer {
  const rate = 16_000;
  const samples = new Float32Array(rate * seconds);
  for (let i = 0; i < samples.length; i++) samples[i] = 0.25 * Math.sin((2 * Math.PI * 440 * i) / rate);
  return wavOf(samples, rate);
}
