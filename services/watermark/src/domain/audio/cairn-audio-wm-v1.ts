import { WATERMARK_ALG } from '@cairn/catalog';
import { ContrastAnalysis, ContrastQimMark, deriveAudioSecret, type ContrastQimSpec } from './contrast-qim.js';

export const CAIRN_AUDIO_WM_V1_NAME = WATERMARK_ALG.audioV1;

/**
 * The frozen parameters of "cairn-audio-wm-v1" (services/watermark/docs/audio.md explains them). Everything happens
 * on the mono mix resampled to 16 kHz: the band used survives every codec and resampling the mark must
 * survive, and one rate makes the frame grid the same for every input. A change that alters marks is a new name.
 */
export const AUDIO_WM = {
  name: CAIRN_AUDIO_WM_V1_NAME,
  sampleRate: 16_000,
  /** One frame: 64 ms at 16 kHz, Hann-windowed, not overlapping (frames never disturb each other's symbols). */
  frame: 1024,
  /** Bins 52..243 of a 1024-point frame: 812–3 800 Hz, under the Nyquist of 8 kHz files, kept by MP3 64k and Opus. */
  firstBin: 52,
  /** Twelve bands a frame, each one symbol; a band is 4 groups of 4 bins (62.5 Hz), two raised and two lowered. */
  bands: 12,
  groups: 4,
  groupWidth: () => 4,
  /** Frames per repetition: 24 × 64 ms = 1.536 s, so any excerpt of 3 s holds the whole message. */
  period: 24,
  /** QIM step on the band's log-energy contrast (natural log units). */
  step: 0.2,
  /** δ_g ∝ E_g^−1: the least mark energy for a symbol's move. */
  spread: 1,
  passes: 3,
  /** Message: 64-bit payload + 32-bit keyed check; rate-½ K=7 convolutional code → 204 code slots, 84 sync slots. */
  payloadBits: 64,
  checkBits: 32,
  /** Detection tries frame offsets in steps of this many samples (a cut moves the grid by any amount): 2 ms. */
  offsetStep: 32,
  scales: [1],
  rescaledSeconds: 60,
  candidates: 2,
  floorQuantile: null,
  minConfidence: 0.2,
  targetSnrDb: 36,
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

/** The 64-bit payload of a watermark id under `key`: the first 8 bytes of its keyed MAC, as the keyed image mark. */
export function audioPayloadFor(key: Uint8Array, watermarkId: string): Uint8Array {
  // Derived under v1's name whichever audio algorithm carries it: a payload names a watermark id, not an algorithm.
  return new Uint8Array(
    deriveAudioSecret(key, CAIRN_AUDIO_WM_V1_NAME, 'payload', watermarkId).subarray(0, AUDIO_WM.payloadBits / 8),
  );
}

/**
 * cairn-audio-wm-v1 under one key. Each 64 ms frame's 812–3 800 Hz band is split in twelve bands; a band carries
 * one symbol, the keyed contrast of its four groups' log-energies, quantised with dither modulation; 24 frames
 * make one repetition. What EmbedAudio and a video's audio track wrote before cairn-audio-wm-v3; still read, and written
 * again for a watermark id recorded with it (cairn-audio-wm-v2 was never written).
 */
export class AudioWatermark extends ContrastQimMark {
  constructor(key: Uint8Array) {
    super(AUDIO_WM, key);
  }
}

/** The key-independent part of v1 detection for `samples` (mono 16 kHz), read under every key. */
export function analyseAudio(samples: Float32Array): ContrastAnalysis {
  return new ContrastAnalysis(AUDIO_WM, samples);
}
