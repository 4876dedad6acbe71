import { createHmac } from 'node:crypto';
import { WATERMARK_ALG } from '@cairn/catalog';
import { convEncode, codedLength, viterbiDecode } from '../image/conv-code.js';
import { keyedRandom, permutation } from '../image/prng.js';
import { Fft } from './fft.js';

export const CAIRN_AUDIO_WM_V1_NAME = WATERMARK_ALG.audioV1;

/**
 * The frozen parameters of "cairn-audio-wm-v1" (services/watermark/README.md explains them). Everything happens
 * on the mono mix resampled to 16 kHz: the band used survives every codec and resampling the mark must
 * survive, and one rate makes the frame grid the same for every input. A change that alters marks is a new name.
 */
export const AUDIO_WM = {
  sampleRate: 16_000,
  /** One frame: 64 ms at 16 kHz, Hann-windowed, not overlapping (frames never disturb each other's symbols). */
  frame: 1024,
  /** Bins 52..243 of a 1024-point frame: 812–3 800 Hz, under the Nyquist of 8 kHz files, kept by MP3 64k and Opus. */
  firstBin: 52,
  /** Twelve bands a frame, each one symbol; a band is 4 groups of 4 bins (62.5 Hz), two raised and two lowered. */
  bands: 12,
  groups: 4,
  binsPerGroup: 4,
  /** Frames per repetition: 24 × 64 ms = 1.536 s, so any excerpt of 3 s holds the whole message. */
  period: 24,
  /** QIM step on the band's log-energy contrast (natural log units). */
  step: 0.2,
  /** How a symbol's move is shared: δ_g ∝ E_g^−spread; 1 is the least mark energy for the move (0: equal shares). */
  spread: 1,
  /** Embedding passes: each measures what the windowed analysis reads and corrects the rest of the move. */
  passes: 3,
  /** Message: 64-bit payload + 32-bit keyed check; rate-½ K=7 convolutional code → 204 code slots, 84 sync slots. */
  payloadBits: 64,
  checkBits: 32,
  /** Detection tries frame offsets in steps of this many samples (a cut moves the grid by any amount): 4 ms. */
  offsetStep: 32,
  /** (offset, shift) candidates, best sync scores first, that get a full decode: each risks 2⁻³² of a false check. */
  candidates: 2,
  /** Below this share of agreeing vote mass a decoded message is not reported, check or not. */
  minConfidence: 0.2,
  /** The SNR the mark is scaled to meet at least, against the 16 kHz mix (dB): a margin over the promised 35. */
  targetSnrDb: 36,
  /** Detection reads at most this much audio (from the start): more copies add little, and the cost is linear. */
  detectMaxSeconds: 60,
} as const;

const SLOTS = AUDIO_WM.period * AUDIO_WM.bands;
const MESSAGE_BITS = AUDIO_WM.payloadBits + AUDIO_WM.checkBits;
const CODE_BITS = codedLength(MESSAGE_BITS);
const SYNC_BITS = SLOTS - CODE_BITS;
const FEATURES = AUDIO_WM.bands * AUDIO_WM.groups;
/** A group whose mean bin power (of the Hann-windowed, 1/N-scaled spectrum) is under this is silence and never votes. */
const GROUP_POWER_FLOOR = 1e-11;

/** Periodic Hann window of one frame. */
const HANN = Float64Array.from(
  { length: AUDIO_WM.frame },
  (_, i) => 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / AUDIO_WM.frame),
);

/**
 * Scales a mark measured at `snrDb` down to `minSnrDb`. A host loud in the band would take a full-strength mark
 * beyond the promised SNR: it gets a weaker one (the detector reads it with less margin).
 */
export function scaleTo(mark: Float32Array, snrDb: number, minSnrDb: number): number {
  const scale = 10 ** ((snrDb - minSnrDb) / 20);
  for (let i = 0; i < mark.length; i++) mark[i] = mark[i]! * scale;
  return minSnrDb;
}

/** HMAC-SHA256(key, "cairn-audio-wm-v1|" + purpose + "|" + message): one independent secret per use of the key. */
export function deriveAudioSecret(
  key: Uint8Array,
  purpose: 'layout' | 'payload' | 'check',
  message: Uint8Array | string = '',
): Buffer {
  if (key.length !== 32) throw new Error('a watermark key is 32 bytes');
  return createHmac('sha256', key).update(`${CAIRN_AUDIO_WM_V1_NAME}|${purpose}|`, 'utf8').update(message).digest();
}

/** The 64-bit payload of a watermark id under `key`: the first 8 bytes of its keyed MAC, as the keyed image mark. */
export function audioPayloadFor(key: Uint8Array, watermarkId: string): Uint8Array {
  return new Uint8Array(deriveAudioSecret(key, 'payload', watermarkId).subarray(0, AUDIO_WM.payloadBits / 8));
}

export interface AudioDetection {
  readonly payload: Uint8Array;
  /** Share of the vote mass agreeing with the decoded codeword, 0..1. */
  readonly confidence: number;
  /** Where the grid was found: samples (16 kHz) into the received audio, and the frame shift within the period. */
  readonly offset: number;
  readonly shift: number;
}

/** Per-key layout: which slot carries what, each slot's dither, each band's keyed group signs. */
interface Layout {
  /** For each slot (frame position × band): index of its code bit, or −1 − index of its sync bit. */
  readonly role: Int32Array;
  readonly dither: Float64Array;
  /** ±1 per group (two of each per band, so a gain change cancels). */
  readonly signs: Float64Array;
  readonly sync: Uint8Array;
}

function layoutOf(key: Uint8Array): Layout {
  const random = keyedRandom(deriveAudioSecret(key, 'layout'));
  const order = permutation(SLOTS, random);
  const role = new Int32Array(SLOTS);
  for (let i = 0; i < SLOTS; i++) role[order[i]!] = i < CODE_BITS ? i : -1 - (i - CODE_BITS);
  const dither = Float64Array.from({ length: SLOTS }, () => random() * AUDIO_WM.step);
  const signs = new Float64Array(FEATURES);
  for (let b = 0; b < AUDIO_WM.bands; b++) {
    const order4 = permutation(AUDIO_WM.groups, random);
    for (let g = 0; g < AUDIO_WM.groups; g++)
      signs[b * AUDIO_WM.groups + g] = order4[g]! < AUDIO_WM.groups / 2 ? 1 : -1;
  }
  const sync = Uint8Array.from({ length: SYNC_BITS }, () => (random() < 0.5 ? 0 : 1));
  return { role, dither, signs, sync };
}

function bitsOf(bytes: Uint8Array): Uint8Array {
  const bits = new Uint8Array(bytes.length * 8);
  for (let i = 0; i < bits.length; i++) bits[i] = (bytes[i >> 3]! >> (7 - (i & 7))) & 1;
  return bits;
}

function bytesOf(bits: Uint8Array): Uint8Array {
  const bytes = new Uint8Array(bits.length / 8);
  for (let i = 0; i < bits.length; i++) bytes[i >> 3] = bytes[i >> 3]! | (bits[i]! << (7 - (i & 7)));
  return bytes;
}

function checkOf(key: Uint8Array, payload: Uint8Array): Uint8Array {
  return new Uint8Array(deriveAudioSecret(key, 'check', payload).subarray(0, AUDIO_WM.checkBits / 8));
}

/** Log-energies (½ ln of mean power) of the 24 groups of a transformed frame; NaN for a silent group. */
function groupLogs(re: Float64Array, im: Float64Array, out: Float64Array | Float32Array, at: number): void {
  const { firstBin, binsPerGroup, frame } = AUDIO_WM;
  const scale = 1 / (frame * frame);
  for (let g = 0; g < FEATURES; g++) {
    let power = 0;
    for (let i = 0; i < binsPerGroup; i++) {
      const k = firstBin + g * binsPerGroup + i;
      power += re[k]! * re[k]! + im[k]! * im[k]!;
    }
    power = (power * scale) / binsPerGroup;
    out[at + g] = power < GROUP_POWER_FLOOR ? Number.NaN : 0.5 * Math.log(power);
  }
}

/**
 * cairn-audio-wm-v1 under one key. Each 64 ms frame's 812–3 800 Hz band is split in twelve bands; a band carries
 * one symbol, the keyed contrast of its four groups' log-energies (two added, two subtracted), quantised with
 * dither modulation to the lattice of its bit. Scaling a group changes only its log-energy, so the mark is
 * proportional to the host in each group (quiet passages and groups carry less), and a gain change cancels.
 * 24 frames make one repetition: 204 slots of the coded message, 84 of a keyed sync pattern that finds the
 * grid after a cut. Detection folds every repetition onto one period, finds the grid by the sync pattern,
 * and decodes the best candidates with soft Viterbi and the 32-bit keyed check.
 */
export class AudioWatermark {
  readonly name = CAIRN_AUDIO_WM_V1_NAME;
  private readonly layout: Layout;
  private readonly fft = new Fft(AUDIO_WM.frame);

  constructor(private readonly key: Uint8Array) {
    this.layout = layoutOf(key);
  }

  /** The symbol of band `b` from group log-energies; null when a group is silent. */
  private feature(logs: Float64Array | Float32Array, at: number, b: number): number | null {
    let f = 0;
    for (let g = 0; g < AUDIO_WM.groups; g++) {
      const value = logs[at + b * AUDIO_WM.groups + g]!;
      if (Number.isNaN(value)) return null;
      f += this.layout.signs[b * AUDIO_WM.groups + g]! * value;
    }
    return f / AUDIO_WM.groups;
  }

  /**
   * The mark to add to `host` (mono, 16 kHz, float): same length, scaled so the SNR against the host is at
   * least targetSnrDb. Answers the SNR reached (Infinity when nothing could carry it, e.g. silence).
   */
  markSignal(
    host: Float32Array,
    payload: Uint8Array,
    minSnrDb: number = AUDIO_WM.targetSnrDb,
  ): { mark: Float32Array; snrDb: number } {
    if (payload.length * 8 !== AUDIO_WM.payloadBits)
      throw new Error(`payload must be ${AUDIO_WM.payloadBits / 8} bytes`);
    const message = new Uint8Array(MESSAGE_BITS);
    message.set(bitsOf(payload));
    message.set(bitsOf(checkOf(this.key, payload)), AUDIO_WM.payloadBits);
    const code = convEncode(message);
    const { frame, bands, groups, binsPerGroup, firstBin, step, period, passes } = AUDIO_WM;
    const re = new Float64Array(frame);
    const im = new Float64Array(frame);
    const logs = new Float64Array(FEATURES);
    const targets = new Float64Array(bands);
    const gains = new Float64Array(FEATURES);
    const marked = new Float64Array(frame);
    const mark = new Float32Array(host.length);
    for (let j = 0; (j + 1) * frame <= host.length; j++) {
      const start = j * frame;
      for (let i = 0; i < frame; i++) marked[i] = host[start + i]!;
      let carries = false;
      for (let pass = 0; pass < passes; pass++) {
        for (let i = 0; i < frame; i++) {
          re[i] = HANN[i]! * marked[i]!;
          im[i] = 0;
        }
        this.fft.transform(re, im);
        groupLogs(re, im, logs, 0);
        let moved = false;
        for (let b = 0; b < bands; b++) {
          for (let g = 0; g < groups; g++) gains[b * groups + g] = 0;
          const feature = this.feature(logs, 0, b);
          if (feature === null) {
            if (pass === 0) targets[b] = Number.NaN;
            continue;
          }
          if (pass === 0) {
            const slot = (j % period) * bands + b;
            const role = this.layout.role[slot]!;
            const bit = role >= 0 ? code[role]! : this.layout.sync[-1 - role]!;
            const lattice = this.layout.dither[slot]! + (bit * step) / 2;
            targets[b] = lattice + step * Math.round((feature - lattice) / step);
          }
          if (Number.isNaN(targets[b]!)) continue;
          const move = targets[b]! - feature;
          // The band's contrast moves by `move` when group g's log-energy moves by δ_g with Σ sign_g δ_g = groups·move.
          // Moving a group costs about its energy × δ_g², so louder groups take less of the move (δ_g ∝ E_g^−γ):
          // the same symbol for less mark energy, without leaving it all to the quietest (most fragile) group.
          let norm = 0;
          for (let g = 0; g < groups; g++) norm += Math.exp(-2 * AUDIO_WM.spread * logs[b * groups + g]!);
          for (let g = 0; g < groups; g++) {
            const share = (groups * Math.exp(-2 * AUDIO_WM.spread * logs[b * groups + g]!)) / norm;
            // Group g's log-energy moves by move·sign·share: its bins' amplitudes scale by e^{that}.
            gains[b * groups + g] = Math.exp(move * share * this.layout.signs[b * groups + g]!) - 1;
          }
          moved = true;
        }
        if (!moved) break;
        carries = true;
        // The change: each band bin of the windowed frame scaled by (gain − 1), its mirror likewise, all else zero.
        for (let k = 0; k < frame; k++) {
          const index = k <= frame / 2 ? k : frame - k;
          const group = Math.floor((index - firstBin) / binsPerGroup);
          const g = index >= firstBin && group < FEATURES ? gains[group]! : 0;
          re[k] = re[k]! * g;
          im[k] = im[k]! * g;
        }
        this.fft.transform(re, im, true);
        for (let i = 0; i < frame; i++) marked[i] = marked[i]! + re[i]!;
      }
      if (carries) for (let i = 0; i < frame; i++) mark[start + i] = marked[i]! - host[start + i]!;
    }
    let hostEnergy = 0;
    let markEnergy = 0;
    for (let i = 0; i < host.length; i++) {
      hostEnergy += host[i]! * host[i]!;
      markEnergy += mark[i]! * mark[i]!;
    }
    if (markEnergy === 0) return { mark, snrDb: Infinity };
    const snrDb = 10 * Math.log10(hostEnergy / markEnergy);
    return { mark, snrDb: snrDb < minSnrDb ? scaleTo(mark, snrDb, minSnrDb) : snrDb };
  }

  /** Reads the mark from mono 16 kHz audio; null when nothing passes the check and the confidence floor. */
  detect(samples: Float32Array): AudioDetection | null {
    return this.decode(analyseAudio(samples));
  }

  /** Decodes an analysis (made once, read under every key): the sync search, then the best candidates. */
  decode(analysis: AudioAnalysis): AudioDetection | null {
    const { period, bands, step } = AUDIO_WM;
    const offsets = analysis.offsets.length;
    // Folded phasors e^{2πi f/Δ} per (offset, frame position, band): every repetition onto one period.
    const cells = offsets * period * bands;
    const foldRe = new Float64Array(cells);
    const foldIm = new Float64Array(cells);
    const count = new Float64Array(cells);
    for (let o = 0; o < offsets; o++) {
      const logs = analysis.offsets[o]!;
      const frames = logs.length / FEATURES;
      for (let j = 0; j < frames; j++) {
        for (let b = 0; b < bands; b++) {
          const f = this.feature(logs, j * FEATURES, b);
          if (f === null) continue;
          const angle = (2 * Math.PI * f) / step;
          const cell = (o * period + (j % period)) * bands + b;
          foldRe[cell] = foldRe[cell]! + Math.cos(angle);
          foldIm[cell] = foldIm[cell]! + Math.sin(angle);
          count[cell] = count[cell]! + 1;
        }
      }
    }
    // The votes at a folded cell for the lattice at `target`: Σ cos(2π(f − target)/Δ) = Re(e^{−2πi target/Δ} · fold).
    const vote = (cell: number, target: number): number => {
      const angle = (2 * Math.PI * target) / step;
      return Math.cos(angle) * foldRe[cell]! + Math.sin(angle) * foldIm[cell]!;
    };
    const ranked: Array<{ score: number; offset: number; shift: number }> = [];
    for (let o = 0; o < offsets; o++) {
      for (let r = 0; r < period; r++) {
        let agree = 0;
        let total = 0;
        for (let p = 0; p < period; p++) {
          const embedded = (p + r) % period;
          for (let b = 0; b < bands; b++) {
            const slot = embedded * bands + b;
            const role = this.layout.role[slot]!;
            const cell = (o * period + p) * bands + b;
            if (role >= 0 || count[cell] === 0) continue;
            agree += vote(cell, this.layout.dither[slot]! + (this.layout.sync[-1 - role]! * step) / 2);
            total += count[cell]!;
          }
        }
        if (total > 0) ranked.push({ score: agree / total, offset: o, shift: r });
      }
    }
    ranked.sort((a, b) => b.score - a.score);
    for (const { offset: o, shift: r } of ranked.slice(0, AUDIO_WM.candidates)) {
      const soft = new Float64Array(CODE_BITS);
      for (let p = 0; p < period; p++) {
        const embedded = (p + r) % period;
        for (let b = 0; b < bands; b++) {
          const slot = embedded * bands + b;
          const role = this.layout.role[slot]!;
          const cell = (o * period + p) * bands + b;
          if (role < 0 || count[cell] === 0) continue;
          // Positive for code bit 0 (the lattice at the dither), negative for 1, as viterbiDecode reads it.
          soft[role] = vote(cell, this.layout.dither[slot]!) / count[cell]!;
        }
      }
      const message = viterbiDecode(soft, MESSAGE_BITS);
      const payload = bytesOf(message.subarray(0, AUDIO_WM.payloadBits));
      if (!Buffer.from(bytesOf(message.subarray(AUDIO_WM.payloadBits))).equals(Buffer.from(checkOf(this.key, payload))))
        continue;
      const code = convEncode(message);
      let agree = 0;
      let mass = 0;
      for (let i = 0; i < CODE_BITS; i++) {
        agree += code[i] ? -soft[i]! : soft[i]!;
        mass += Math.abs(soft[i]!);
      }
      const confidence = mass > 0 ? Math.max(0, agree / mass) : 0;
      if (confidence < AUDIO_WM.minConfidence) continue;
      return { payload, confidence, offset: analysis.offsetSamples[o]!, shift: r };
    }
    return null;
  }
}

/**
 * The key-independent part of detection: for each candidate frame offset, the group log-energies of every
 * frame (NaN for silent groups). Made once per file and decoded under each key.
 */
export interface AudioAnalysis {
  readonly offsets: ReadonlyArray<Float32Array>;
  readonly offsetSamples: ReadonlyArray<number>;
}

export function analyseAudio(samples: Float32Array): AudioAnalysis {
  const { frame, offsetStep, sampleRate, detectMaxSeconds } = AUDIO_WM;
  const length = Math.min(samples.length, detectMaxSeconds * sampleRate);
  const fft = new Fft(frame);
  const re = new Float64Array(frame);
  const im = new Float64Array(frame);
  const a = { re: new Float64Array(frame), im: new Float64Array(frame) };
  const b = { re: new Float64Array(frame), im: new Float64Array(frame) };
  const offsets: Float32Array[] = [];
  const offsetSamples: number[] = [];
  for (let o = 0; o < frame; o += offsetStep) {
    const frames = Math.max(0, Math.floor((length - o) / frame));
    const logs = new Float32Array(frames * FEATURES);
    // Two real frames per complex transform: one in the real part, the next in the imaginary part.
    for (let j = 0; j < frames; j += 2) {
      const first = o + j * frame;
      const second = j + 1 < frames ? first + frame : -1;
      for (let i = 0; i < frame; i++) {
        re[i] = HANN[i]! * samples[first + i]!;
        im[i] = second >= 0 ? HANN[i]! * samples[second + i]! : 0;
      }
      fft.transform(re, im);
      const { firstBin } = AUDIO_WM;
      for (let k = firstBin; k < firstBin + FEATURES * AUDIO_WM.binsPerGroup; k++) {
        const m = frame - k;
        // X_k = (Z_k + conj Z_{N−k}) / 2, Y_k = (Z_k − conj Z_{N−k}) / 2i.
        a.re[k] = (re[k]! + re[m]!) / 2;
        a.im[k] = (im[k]! - im[m]!) / 2;
        b.re[k] = (im[k]! + im[m]!) / 2;
        b.im[k] = (re[m]! - re[k]!) / 2;
      }
      groupLogs(a.re, a.im, logs, j * FEATURES);
      if (second >= 0) groupLogs(b.re, b.im, logs, (j + 1) * FEATURES);
    }
    offsets.push(logs);
    offsetSamples.push(o);
  }
  return { offsets, offsetSamples };
}
