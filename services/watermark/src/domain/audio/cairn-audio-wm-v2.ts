import { WATERMARK_ALG } from '@cairn/catalog';
import { ContrastAnalysis, ContrastQimMark, type ContrastQimSpec } from './contrast-qim.js';

export const CAIRN_AUDIO_WM_V2_NAME = WATERMARK_ALG.audioV2;

/**
 * The frozen parameters of "cairn-audio-wm-v2" (services/watermark/docs/audio.md explains them and what changed from
 * v1): the band starts at 312 Hz, where speech and music keep their energy above added noise; groups are at least
 * 4 bins (62.5 Hz) wide, so a group of a harmonic sound holds a partial, which codecs keep, not only the valley
 * between two, which they drop; a larger QIM step, scaled back to the SNR (distortion-compensated); detection
 * weighs each symbol by how far its band rises above the file's noise floor and undoes playback-rate changes of
 * ±2.5 and ±5 %. A change that alters marks is a new name.
 */
export const AUDIO_WM_V2 = {
  name: CAIRN_AUDIO_WM_V2_NAME,
  sampleRate: 16_000,
  /** One frame: 64 ms at 16 kHz (15.625 Hz bins), Hann-windowed, not overlapping. */
  frame: 1024,
  /** Bins 20..231: 312–3 625 Hz, under the 4 kHz Nyquist of 8 kHz files. */
  firstBin: 20,
  /** Twelve bands a frame, each one symbol; a band is 4 groups, two raised and two lowered by the key. */
  bands: 12,
  groups: 4,
  /** A band's groups are 3 % of its lowest frequency wide, at least 4 bins (62.5 Hz): 4 up to 2.6 kHz, then 5 and 6. */
  groupWidth: (bin: number) => Math.max(4, Math.round(0.03 * bin)),
  /** Frames per repetition: 24 × 64 ms = 1.536 s, so any excerpt of 3 s holds the whole message. */
  period: 24,
  /**
   * QIM step on the band's log-energy contrast (natural log units): 1.25× v1's. The full move is then above the
   * SNR budget on speech and the mark is scaled back to it, leaving each symbol part of the way (distortion
   * compensation). Measured against 0.2 and 0.3: 0.3 read more music through codecs and noise but fewer 3 s
   * excerpts, 0.2 the reverse; 0.25 sits between on both.
   */
  step: 0.25,
  /** δ_g ∝ E_g^−1: the least mark energy for a symbol's move (measured: less lost more to codecs than it gained). */
  spread: 1,
  /** Two passes (v1: three): the second corrects what the first's windowing missed; a third added little. */
  passes: 2,
  /** Message: 64-bit payload + 32-bit keyed check; rate-½ K=7 convolutional code → 204 code slots, 84 sync slots. */
  payloadBits: 64,
  checkBits: 32,
  /**
   * Detection tries frame offsets in steps of 4 ms (at most 2 ms off): the host's contrast is on its lattice only
   * on the embedding grid, and 4 ms off already loses most symbols of a short excerpt.
   */
  offsetStep: 64,
  /**
   * Playback-rate factors detection undoes (pitch and tempo together), 1 first, then ±5 %. Each reads copies
   * within about ±1 % of it (a shift of under half a group's width up to 3.6 kHz); speeds between are not read
   * (±2.5 % scales would cover them at twice the cost of reading unmarked audio).
   */
  scales: [1, 1.05, 0.95],
  /**
   * The other scales read the first 9 s (about 6 repetitions): tried only when scale 1 found nothing, so unmarked
   * audio pays for them.
   */
  rescaledSeconds: 9,
  /** (offset, shift) candidates per scale that get a full decode: each risks 2⁻³² of a false check. */
  candidates: 2,
  /** Each band's floor is the 10 % quantile of its power over the file; a symbol votes 1 − floor/power. */
  floorQuantile: 0.1,
  minConfidence: 0.1,
  /** The SNR the mark is scaled to meet at least, against the 16 kHz mix (dB): a margin over the promised 35. */
  targetSnrDb: 36,
  /** Detection reads at most this much audio (from the start): more copies add little, and the cost is linear. */
  detectMaxSeconds: 60,
  waterLevel: false,
  weightPowers: [1],
  /** The best Viterbi path only. */
  listPaths: 1,
  /** No sync-calibrated decodes (v3 detection added them; this spec reads as it was measured). */
  calibrated: [],
  closeSyncZ: Infinity,
  closeListPaths: 1,
} as const satisfies ContrastQimSpec;

/**
 * cairn-audio-wm-v2 under one key: the v1 construction (dither-modulated keyed log-energy contrasts, repeated
 * every 1.536 s, folded at detection) with the band, group widths, reliability weighting and rate scales above.
 */
export class AudioWatermarkV2 extends ContrastQimMark {
  constructor(key: Uint8Array) {
    super(AUDIO_WM_V2, key);
  }
}

/** The key-independent part of v2 detection for `samples` (mono 16 kHz), read under every key. */
export function analyseAudioV2(samples: Float32Array): ContrastAnalysis {
  return new ContrastAnalysis(AUDIO_WM_V2, samples);
}
