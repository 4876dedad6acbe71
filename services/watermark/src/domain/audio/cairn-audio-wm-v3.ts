import { WATERMARK_ALG } from '@cairn/catalog';
import { ContrastAnalysis, ContrastQimMark, type ContrastQimSpec } from './contrast-qim.js';

export const CAIRN_AUDIO_WM_V3_NAME = WATERMARK_ALG.audioV3;

/**
 * The frozen parameters of "cairn-audio-wm-v3" (services/watermark/docs/audio.md explains them, docs/audio-benches.md
 * what was measured): v2's band, groups, rate scales and reliability weighting, with the SNR budget spent under a water
 * level on each symbol's mark energy instead of one scale for all, which leaves room for a QIM step of 0.45 (noise and
 * Vorbis q3 move a contrast less than a quarter step); detection also tries a sharper reliability weight. A change that
 * alters marks is a new name.
 */
export const AUDIO_WM_V3 = {
  name: CAIRN_AUDIO_WM_V3_NAME,
  sampleRate: 16_000,
  /** One frame: 64 ms at 16 kHz (15.625 Hz bins), Hann-windowed, not overlapping. */
  frame: 1024,
  /** Bins 20..231: 312–3 625 Hz, under the 4 kHz Nyquist of 8 kHz files (as v2). */
  firstBin: 20,
  /** Twelve bands a frame, each one symbol; a band is 4 groups, two raised and two lowered by the key. */
  bands: 12,
  groups: 4,
  /** A band's groups are 3 % of its lowest frequency wide, at least 4 bins (62.5 Hz): 4 up to 2.6 kHz, then 5 and 6. */
  groupWidth: (bin: number) => Math.max(4, Math.round(0.03 * bin)),
  /** Frames per repetition: 24 × 64 ms = 1.536 s, so any excerpt of 3 s holds the whole message. */
  period: 24,
  /**
   * QIM step on the band's log-energy contrast (natural log units): 2.25× v1's. Measured with the water level
   * against 0.4 and 0.5: 0.5 lost the music's 3 s excerpt, 0.4 more copies under noise.
   */
  step: 0.45,
  /** δ_g ∝ E_g^−0.7: less of the move in a band's quietest group, which codecs and noise take first (v2: 1). */
  spread: 0.7,
  /** Three passes: the larger step leaves more for the windowed analysis to miss after one correction. */
  passes: 3,
  /** Message: 64-bit payload + 32-bit keyed check; rate-½ K=7 convolutional code → 204 code slots, 84 sync slots. */
  payloadBits: 64,
  checkBits: 32,
  /** Detection tries frame offsets in steps of 4 ms (at most 2 ms off), as v2. */
  offsetStep: 64,
  /** Playback-rate factors detection undoes (pitch and tempo together), 1 first, then ±5 %, as v2. */
  scales: [1, 1.05, 0.95],
  /** The other scales read the first 9 s, tried only when scale 1 found nothing. */
  rescaledSeconds: 9,
  /** (offset, shift) candidates per scale and weight that get a full decode: each risks 2⁻³² of a false check. */
  candidates: 2,
  /** Each band's floor is the 10 % quantile of its power over the file. */
  floorQuantile: 0.1,
  minConfidence: 0.1,
  /** The SNR the mark is held to at least, against the 16 kHz mix and the upload (dB): a margin over the promised 35. */
  targetSnrDb: 36,
  detectMaxSeconds: 60,
  /** The budget is spent under a water level on each symbol's mark energy (v1, v2: one scale for every symbol). */
  waterLevel: true,
  /**
   * Symbols vote with (1 − floor/power), then its 4th and 8th powers: under added white noise most symbols sit
   * near the floor and a sharper weight mutes them; a music host's own floor wants the plain weight.
   */
  weightPowers: [1, 4, 8],
  /**
   * The 8 best Viterbi paths at scale 1 (a detection-side change: marks are unchanged): over 6 keys × 4 recordings ×
   * 3 draws of white noise at 20 dB it read 71 of 72 copies, the best path alone 65; on 4 fresh keys 47 of 48 (43).
   * 2 × 3 × (8 + 2) = 60 checks a read per key.
   */
  listPaths: 8,
  /**
   * Then, per candidate of power 1 at scale 1, two sync-calibrated decodes (detection only; marks unchanged): the
   * plain contrasts, which read the music's 3 s excerpt under the keys the fixed weights missed, and the contrasts
   * with each group's floor taken off, which read speech and the c2pa-rs sample under white noise at 20 dB.
   * 2 × (3 × (8 + 2) + 2 × 8) = 92 checks a read per key.
   */
  calibrated: [0, 1],
  /**
   * 128 paths for a candidate whose sync z-score reaches 4.5 (the 8 kHz c2pa-rs sample under white noise at 20 dB:
   * 231 → 240 of 240 copies, 237 with 64 paths; the true grid at z 5–6.4; unmarked audio's best candidates stayed
   * under 3 in 2,160). The gate opens on unmarked audio at most 1,152 × e^−10.1 ≈ 0.046 times a read, for at most
   * 2 × 5 × 120 checks: ≤ 56 more a read on average, ≤ 148 in all.
   */
  closeSyncZ: 4.5,
  closeListPaths: 128,
} as const satisfies ContrastQimSpec;

/** cairn-audio-wm-v3 under one key: what EmbedAudio and a video's audio track write. */
export class AudioWatermarkV3 extends ContrastQimMark {
  constructor(key: Uint8Array) {
    super(AUDIO_WM_V3, key);
  }
}

/** The key-independent part of v3 detection for `samples` (mono 16 kHz), read under every key. */
export function analyseAudioV3(samples: Float32Array): ContrastAnalysis {
  return new ContrastAnalysis(AUDIO_WM_V3, samples);
}
