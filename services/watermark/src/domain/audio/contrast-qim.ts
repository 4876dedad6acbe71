import { createHmac } from 'node:crypto';
import { convEncode, codedLength, listViterbiDecode, viterbiDecode } from '../image/conv-code.js';
import { keyedRandom, permutation } from '../image/prng.js';
import { fft } from '@cairn/media/fft';

/**
 * The audio marks' engine: dither modulation (QIM) of keyed log-energy contrasts in 64 ms frames of the 16 kHz
 * mono mix, repeated every `period` frames, read by folding every repetition onto one period. cairn-audio-wm-v1,
 * v2 and v3 are frozen parameter sets of it (services/watermark/docs/audio.md explains them): a spec that alters marks
 * is a new name.
 */
export interface ContrastQimSpec {
  /** The algorithm's name: it keys the layout and the check, so two specs never read each other's marks. */
  readonly name: string;
  readonly sampleRate: 16_000;
  /** One frame, Hann-windowed, not overlapping (frames never disturb each other's symbols). */
  readonly frame: 1024;
  /** The first bin of the lowest group. */
  readonly firstBin: number;
  /** Symbols a frame; each is the keyed contrast of `groups` groups of adjacent bins, half added, half subtracted. */
  readonly bands: number;
  readonly groups: number;
  /** The width in bins of the groups of a band starting at `bin`. */
  readonly groupWidth: (bin: number) => number;
  /** Frames per repetition. */
  readonly period: number;
  /** QIM step on the band's log-energy contrast (natural log units). */
  readonly step: number;
  /** How a symbol's move is shared: δ_g ∝ E_g^−spread; 1 is the least mark energy for the move (0: equal shares). */
  readonly spread: number;
  /** Embedding passes: each measures what the windowed analysis reads and corrects the rest of the move. */
  readonly passes: number;
  /** Message: payload + keyed check, rate-½ K=7 convolutional code; the rest of a repetition's slots are sync. */
  readonly payloadBits: 64;
  readonly checkBits: 32;
  /** Detection tries frame offsets in steps of this many samples (a cut moves the grid by any amount). */
  readonly offsetStep: number;
  /** Playback-rate factors detection undoes, in order (1 first); each adds `candidates` decodes. */
  readonly scales: ReadonlyArray<number>;
  /** The scales other than 1 read at most this much audio: they are tried only when scale 1 found nothing. */
  readonly rescaledSeconds: number;
  /** (offset, shift) candidates per scale, best sync scores first, that get a full decode: each risks 2⁻³². */
  readonly candidates: number;
  /**
   * A band's noise floor is this quantile of its power over the file's frames, and a symbol votes with weight
   * 1 − floor/power; null: every symbol votes alike.
   */
  readonly floorQuantile: number | null;
  /** Below this share of agreeing vote mass a decoded message is not reported, check or not. */
  readonly minConfidence: number;
  /** The SNR the mark is scaled to meet at least, against the 16 kHz mix (dB): a margin over the promised 35. */
  readonly targetSnrDb: number;
  /** Detection reads at most this much audio (from the start): more copies add little, and the cost is linear. */
  readonly detectMaxSeconds: number;
  /**
   * How the SNR budget is spent when the full moves would exceed it. false: every symbol's move is scaled alike
   * afterwards (v1, v2). true: a water level on each symbol's mark energy, measured on the host before embedding:
   * symbols cheaper than the level move all the way onto their lattice, dearer ones (loud frames) part of it.
   */
  readonly waterLevel: boolean;
  /**
   * The powers of the reliability weight (1 − floor/power) detection tries, in order, each a full sync search and
   * `candidates` decodes: 1 suits a host with a high floor of its own (music), a sharper weight mutes the symbols
   * that added noise covers (speech under white noise).
   */
  readonly weightPowers: ReadonlyArray<number>;
  /**
   * Paths of the list Viterbi decoder tried against the keyed check at scale 1, best first (1: the best path only).
   * When noise makes a wrong path win by a little the right one is usually among the next few; each path tried is
   * one more 2⁻³² chance for noise to pass the check. The other scales read copies with margin to spare (a speed
   * change is no noise) and keep the best path, which keeps the false-positive bound low.
   */
  readonly listPaths: number;
  /**
   * Sync-calibrated decodes (detection only): after the plain decode of each candidate of the first weight at
   * scale 1, its code votes again, each symbol weighted by how well the sync symbols of its class (its level over
   * the band's floor, in 3 dB steps) agree with their known lattice at that candidate, once per entry here: the
   * share of each group's floor power taken off before the log (0: none; 1: all of it, which undoes the contrast
   * that added noise squeezes toward 0). Each entry tried is `candidates` × listPaths more checks. Empty: none.
   */
  readonly calibrated: ReadonlyArray<number>;
  /**
   * At scale 1 a candidate whose sync z-score (its sync votes over their spread) reaches closeSyncZ is decoded with
   * closeListPaths paths instead of listPaths, plain and calibrated alike. Without a mark z ≥ a has odds under
   * exp(−a²/2) per candidate (the keyed dither makes each sync cell's vote an independent bounded term), so the
   * longer lists add their checks to a read only that rarely (checksPerRead counts it). Infinity: never.
   */
  readonly closeSyncZ: number;
  readonly closeListPaths: number;
}

/** Keyed checks one read makes under one key when nothing is found (every scale and weight): the false-positive count. */
export function checksPerRead(spec: ContrastQimSpec): number {
  const plain = spec.weightPowers.length * (spec.listPaths + spec.scales.length - 1);
  const always = spec.candidates * (plain + spec.calibrated.length * spec.listPaths);
  // The longer lists, paid only when some scale-1 candidate of some weight reaches closeSyncZ: union bound over
  // every (offset, shift) candidate of every weight, each at most exp(−z²/2), times the checks they add.
  const grids = (spec.frame / spec.offsetStep) * spec.period * spec.weightPowers.length;
  const opens = Math.min(1, grids * Math.exp(-(spec.closeSyncZ ** 2) / 2));
  const longer =
    spec.candidates * (spec.weightPowers.length + spec.calibrated.length) * (spec.closeListPaths - spec.listPaths);
  return always + opens * Math.max(0, longer);
}

/** A group whose mean bin power (of the Hann-windowed, 1/N-scaled spectrum) is under this is silence and never votes. */
const GROUP_POWER_FLOOR = 1e-11;

/**
 * Sync-calibrated decodes sort symbols by their level over the band's floor in steps of this many dB, the last
 * class open-ended: 0–3 dB (noise read as a mark) … 21 dB and more (the loudest frames, which the water level moves
 * only part of the way).
 */
const CLASS_DB = 3;
const CLASSES = 8;
/**
 * A class's agreement is its sync votes' summed cosine over (count + this): a class with few sync symbols (a 3 s
 * excerpt has about 170 in all) is pulled toward 0 rather than trusted on a handful.
 */
const CLASS_PRIOR = 5;
/** A group's power after its floor is taken off keeps at least this share of what was measured (never below 0). */
const FLOOR_KEEP = 0.1;

/** Periodic Hann window of one frame. */
const HANN = Float64Array.from({ length: 1024 }, (_, i) => 0.5 - 0.5 * Math.cos((2 * Math.PI * i) / 1024));

/**
 * Scales a mark measured at `snrDb` down to `minSnrDb`. A host loud in the band would take a full-strength mark
 * beyond the promised SNR: it gets a weaker one (the detector reads it with less margin).
 */
export function scaleTo(mark: Float32Array, snrDb: number, minSnrDb: number): number {
  const scale = 10 ** ((snrDb - minSnrDb) / 20);
  for (let i = 0; i < mark.length; i++) mark[i] = mark[i]! * scale;
  return minSnrDb;
}

/** HMAC-SHA256(key, algorithm + "|" + purpose + "|" + message): one independent secret per use of the key. */
export function deriveAudioSecret(
  key: Uint8Array,
  algorithm: string,
  purpose: 'layout' | 'payload' | 'check',
  message: Uint8Array | string = '',
): Buffer {
  if (key.length !== 32) throw new Error('a watermark key is 32 bytes');
  return createHmac('sha256', key).update(`${algorithm}|${purpose}|`, 'utf8').update(message).digest();
}

export interface AudioDetection {
  readonly payload: Uint8Array;
  /** Share of the vote mass agreeing with the decoded codeword, 0..1. */
  readonly confidence: number;
  /** Where the grid was found: samples (16 kHz) into the received audio, and the frame shift within the period. */
  readonly offset: number;
  readonly shift: number;
  /** The playback-rate factor the copy was read at. */
  readonly scale: number;
}

/** Where each group lies, derived once per spec. */
interface Geometry {
  readonly features: number;
  readonly start: Int32Array;
  readonly width: Int32Array;
  /** One past the last bin used. */
  readonly lastBin: number;
  /** For each bin under lastBin, its group, or −1. */
  readonly groupOfBin: Int32Array;
}

const geometries = new WeakMap<ContrastQimSpec, Geometry>();

function geometryOf(spec: ContrastQimSpec): Geometry {
  const known = geometries.get(spec);
  if (known) return known;
  const features = spec.bands * spec.groups;
  const start = new Int32Array(features);
  const width = new Int32Array(features);
  let bin = spec.firstBin;
  for (let b = 0; b < spec.bands; b++) {
    const w = spec.groupWidth(bin);
    for (let g = 0; g < spec.groups; g++) {
      start[b * spec.groups + g] = bin + g * w;
      width[b * spec.groups + g] = w;
    }
    bin += spec.groups * w;
  }
  if (bin > spec.frame / 2) throw new Error(`${spec.name}: the bands pass the Nyquist bin`);
  const groupOfBin = new Int32Array(bin).fill(-1);
  for (let g = 0; g < features; g++) for (let i = 0; i < width[g]!; i++) groupOfBin[start[g]! + i] = g;
  const geometry = { features, start, width, lastBin: bin, groupOfBin };
  geometries.set(spec, geometry);
  return geometry;
}

/** The shortest audio a detector can read: one repetition and a frame (the grid may start anywhere in it). */
export function minDetectSeconds(spec: ContrastQimSpec): number {
  return ((spec.period + 1) * spec.frame) / spec.sampleRate;
}

export function bitsOf(bytes: Uint8Array): Uint8Array {
  const bits = new Uint8Array(bytes.length * 8);
  for (let i = 0; i < bits.length; i++) bits[i] = (bytes[i >> 3]! >> (7 - (i & 7))) & 1;
  return bits;
}

function bytesOf(bits: Uint8Array): Uint8Array {
  const bytes = new Uint8Array(bits.length / 8);
  for (let i = 0; i < bits.length; i++) bytes[i >> 3] = bytes[i >> 3]! | (bits[i]! << (7 - (i & 7)));
  return bytes;
}

/** ½ ln of the mean bin power of every group of a transformed frame; NaN for a silent group. */
function groupLogs(
  geometry: Geometry,
  frame: number,
  re: Float64Array,
  im: Float64Array,
  out: Float64Array | Float32Array,
  at: number,
): void {
  const scale = 1 / (frame * frame);
  for (let g = 0; g < geometry.features; g++) {
    let power = 0;
    const start = geometry.start[g]!;
    const width = geometry.width[g]!;
    for (let k = start; k < start + width; k++) power += re[k]! * re[k]! + im[k]! * im[k]!;
    power = (power * scale) / width;
    out[at + g] = power < GROUP_POWER_FLOOR ? Number.NaN : 0.5 * Math.log(power);
  }
}

/** Per-key layout: which slot carries what, each slot's dither, each band's keyed group signs, the sync pattern. */
interface Layout {
  /** For each slot (frame position × band): index of its code bit, or −1 − index of its sync bit. */
  readonly role: Int32Array;
  readonly dither: Float64Array;
  /** ±1 per group (half of each per band, so a gain change cancels). */
  readonly signs: Float64Array;
  readonly sync: Uint8Array;
}

/**
 * One spec under one key. A band's symbol is the keyed contrast of its groups' log-energies, quantised with
 * dither modulation to the lattice of its bit. Scaling a group changes only its log-energy, so the mark is
 * proportional to the host in each group (quiet passages and groups carry less), and a gain change cancels.
 * One repetition holds the coded message and a keyed sync pattern that finds the grid after a cut. Detection
 * folds every repetition onto one period, finds the grid by the sync pattern (at each scale), and decodes the
 * best candidates with soft Viterbi and the 32-bit keyed check.
 */
export class ContrastQimMark {
  readonly name: string;
  private readonly layout: Layout;
  private readonly geometry: Geometry;
  private readonly codeBits: number;
  private readonly messageBits: number;

  constructor(
    readonly spec: ContrastQimSpec,
    private readonly key: Uint8Array,
  ) {
    this.name = spec.name;
    this.geometry = geometryOf(spec);
    this.messageBits = spec.payloadBits + spec.checkBits;
    this.codeBits = codedLength(this.messageBits);
    const slots = spec.period * spec.bands;
    const random = keyedRandom(deriveAudioSecret(key, spec.name, 'layout'));
    const order = permutation(slots, random);
    const role = new Int32Array(slots);
    for (let i = 0; i < slots; i++) role[order[i]!] = i < this.codeBits ? i : -1 - (i - this.codeBits);
    const dither = Float64Array.from({ length: slots }, () => random() * spec.step);
    const signs = new Float64Array(this.geometry.features);
    for (let b = 0; b < spec.bands; b++) {
      const order4 = permutation(spec.groups, random);
      for (let g = 0; g < spec.groups; g++) signs[b * spec.groups + g] = order4[g]! < spec.groups / 2 ? 1 : -1;
    }
    const sync = Uint8Array.from({ length: slots - this.codeBits }, () => (random() < 0.5 ? 0 : 1));
    this.layout = { role, dither, signs, sync };
  }

  private checkOf(payload: Uint8Array): Uint8Array {
    return new Uint8Array(
      deriveAudioSecret(this.key, this.spec.name, 'check', payload).subarray(0, this.spec.checkBits / 8),
    );
  }

  /** Whether a decoded message's last checkBits are the keyed check of its payload. */
  private checkPasses(message: Uint8Array): boolean {
    const { payloadBits } = this.spec;
    const payload = bytesOf(message.subarray(0, payloadBits));
    return Buffer.from(bytesOf(message.subarray(payloadBits))).equals(Buffer.from(this.checkOf(payload)));
  }

  /** The lattice point nearest `feature` for the bit slot (j, b) carries. */
  private latticeTarget(j: number, b: number, feature: number, code: Uint8Array): number {
    const { period, bands, step } = this.spec;
    const slot = (j % period) * bands + b;
    const role = this.layout.role[slot]!;
    const bit = role >= 0 ? code[role]! : this.layout.sync[-1 - role]!;
    const lattice = this.layout.dither[slot]! + (bit * step) / 2;
    return lattice + step * Math.round((feature - lattice) / step);
  }

  /** Each group's amplitude gain − 1 that moves band b's contrast by `move`. */
  private bandGains(logs: Float64Array, b: number, move: number, gains: Float64Array): void {
    const { groups, spread } = this.spec;
    // The band's contrast moves by `move` when group g's log-energy moves by δ_g with Σ sign_g δ_g = groups·move.
    // Moving a group costs about its energy × δ_g², so louder groups take less of the move (δ_g ∝ E_g^−γ):
    // the same symbol for less mark energy, without leaving it all to the quietest (most fragile) group.
    let norm = 0;
    for (let g = 0; g < groups; g++) norm += Math.exp(-2 * spread * logs[b * groups + g]!);
    for (let g = 0; g < groups; g++) {
      const share = (groups * Math.exp(-2 * spread * logs[b * groups + g]!)) / norm;
      // Group g's log-energy moves by move·sign·share: its bins' amplitudes scale by e^{that}.
      gains[b * groups + g] = Math.exp(move * share * this.layout.signs[b * groups + g]!) - 1;
    }
  }

  /**
   * The share of its full move each (frame, band) symbol gets under a water level on its mark energy: the energy
   * of the first pass's change, measured on the host, Σ over the level ≤ the budget of targetSnrDb. Symbols cheaper
   * than the level move all the way onto their lattice, dearer ones (loud frames, loud bands) by √(level/cost) of it.
   * The later passes roughly double what the first pass costs (the windowed analysis sees a windowed change), so
   * the mark still ends above the budget and the SNR scaling that follows brings it down; what the level changes is
   * which symbols carry the budget.
   */
  private symbolShares(host: Float32Array, code: Uint8Array): Float64Array {
    const { frame, bands, groups, targetSnrDb } = this.spec;
    const { features, start, width } = this.geometry;
    const frames = Math.floor(host.length / frame);
    const cost = new Float64Array(frames * bands);
    const re = new Float64Array(frame);
    const im = new Float64Array(frame);
    const logs = new Float64Array(features);
    const gains = new Float64Array(features);
    let hostEnergy = 0;
    for (let i = 0; i < host.length; i++) hostEnergy += host[i]! * host[i]!;
    for (let j = 0; j < frames; j++) {
      for (let i = 0; i < frame; i++) {
        re[i] = HANN[i]! * host[j * frame + i]!;
        im[i] = 0;
      }
      fft(re, im);
      groupLogs(this.geometry, frame, re, im, logs, 0);
      for (let b = 0; b < bands; b++) {
        const feature = this.feature(logs, 0, b);
        if (feature === null) continue;
        this.bandGains(logs, b, this.latticeTarget(j, b, feature, code) - feature, gains);
        let e = 0;
        for (let g = b * groups; g < (b + 1) * groups; g++)
          for (let k = start[g]!; k < start[g]! + width[g]!; k++)
            e += (re[k]! * re[k]! + im[k]! * im[k]!) * gains[g]! ** 2;
        cost[j * bands + b] = (2 * e) / frame;
      }
    }
    const budget = hostEnergy / 10 ** (targetSnrDb / 10);
    const share = new Float64Array(frames * bands).fill(1);
    let total = 0;
    let hi = 0;
    for (const c of cost) {
      total += c;
      hi = Math.max(hi, c);
    }
    if (total <= budget) return share;
    let lo = 0;
    for (let it = 0; it < 50; it++) {
      const mid = (lo + hi) / 2;
      let used = 0;
      for (const c of cost) used += Math.min(c, mid);
      if (used > budget) hi = mid;
      else lo = mid;
    }
    for (let i = 0; i < cost.length; i++) if (cost[i]! > lo) share[i] = Math.sqrt(lo / cost[i]!);
    return share;
  }

  /** The symbol of band `b` from group log-energies; null when a group is silent. */
  private feature(logs: Float64Array | Float32Array, at: number, b: number): number | null {
    const { groups } = this.spec;
    let f = 0;
    for (let g = 0; g < groups; g++) {
      const value = logs[at + b * groups + g]!;
      if (Number.isNaN(value)) return null;
      f += this.layout.signs[b * groups + g]! * value;
    }
    return f / groups;
  }

  /**
   * The mark to add to `host` (mono, 16 kHz, float): same length, scaled so the SNR against the host is at
   * least minSnrDb. Answers the SNR reached (Infinity when nothing could carry it, e.g. silence).
   */
  markSignal(
    host: Float32Array,
    payload: Uint8Array,
    minSnrDb: number = this.spec.targetSnrDb,
  ): { mark: Float32Array; snrDb: number } {
    const { frame, bands, groups, passes, payloadBits } = this.spec;
    if (payload.length * 8 !== payloadBits) throw new Error(`payload must be ${payloadBits / 8} bytes`);
    const { features, lastBin, groupOfBin } = this.geometry;
    const message = new Uint8Array(this.messageBits);
    message.set(bitsOf(payload));
    message.set(bitsOf(this.checkOf(payload)), payloadBits);
    const code = convEncode(message);
    const re = new Float64Array(frame);
    const im = new Float64Array(frame);
    const logs = new Float64Array(features);
    const targets = new Float64Array(bands);
    const gains = new Float64Array(features);
    const marked = new Float64Array(frame);
    const mark = new Float32Array(host.length);
    const share = this.spec.waterLevel ? this.symbolShares(host, code) : null;
    for (let j = 0; (j + 1) * frame <= host.length; j++) {
      const start = j * frame;
      for (let i = 0; i < frame; i++) marked[i] = host[start + i]!;
      let carries = false;
      for (let pass = 0; pass < passes; pass++) {
        for (let i = 0; i < frame; i++) {
          re[i] = HANN[i]! * marked[i]!;
          im[i] = 0;
        }
        fft(re, im);
        groupLogs(this.geometry, frame, re, im, logs, 0);
        let moved = false;
        for (let b = 0; b < bands; b++) {
          for (let g = 0; g < groups; g++) gains[b * groups + g] = 0;
          const feature = this.feature(logs, 0, b);
          if (feature === null) {
            if (pass === 0) targets[b] = Number.NaN;
            continue;
          }
          if (pass === 0) {
            const full = this.latticeTarget(j, b, feature, code);
            targets[b] = share ? feature + share[j * bands + b]! * (full - feature) : full;
          }
          if (Number.isNaN(targets[b]!)) continue;
          const move = targets[b]! - feature;
          // The band's contrast moves by `move` when group g's log-energy moves by δ_g with Σ sign_g δ_g = groups·move.
          // Moving a group costs about its energy × δ_g², so louder groups take less of the move (δ_g ∝ E_g^−γ):
          // the same symbol for less mark energy, without leaving it all to the quietest (most fragile) group.
          this.bandGains(logs, b, move, gains);
          moved = true;
        }
        if (!moved) break;
        carries = true;
        // The change: each band bin of the windowed frame scaled by (gain − 1), its mirror likewise, all else zero.
        for (let k = 0; k < frame; k++) {
          const index = k <= frame / 2 ? k : frame - k;
          const group = index < lastBin ? groupOfBin[index]! : -1;
          const g = group >= 0 ? gains[group]! : 0;
          re[k] = re[k]! * g;
          im[k] = im[k]! * g;
        }
        fft(re, im, true);
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
    return this.decode(new ContrastAnalysis(this.spec, samples));
  }

  /** Decodes an analysis (made once, read under every key): per scale, in order, the sync search then the best candidates. */
  decode(analysis: ContrastAnalysis): AudioDetection | null {
    if (analysis.spec !== this.spec) throw new Error(`an analysis for ${analysis.spec.name} read as ${this.name}`);
    for (let s = 0; s < this.spec.scales.length; s++) {
      for (const power of this.spec.weightPowers) {
        const found = this.decodeScale(analysis.at(s), power);
        if (found) return found;
      }
    }
    return null;
  }

  /**
   * The code bits' votes at candidate (offset o, shift r), each symbol weighted by its class's reliability as the
   * sync symbols measure it there: the concentration κ whose von Mises mean cosine is the class's sync agreement
   * (the log-likelihood ratio of a bit is 2κ cos of its phase). One weighting does not suit every copy: the plain
   * one (1 − floor/power) gives a clean excerpt's loudest symbols, which the water level moved only part of the
   * way, the most weight, and under added noise no power of it mutes the near-floor symbols as much as they
   * deserve; the sync pattern measures both on the copy at hand. `subtract`: the share of each group's floor
   * power taken off before the log (added noise squeezes every contrast toward 0; a music host's floor is its own
   * sound and wants none).
   */
  private calibratedSoft(analysis: ScaleAnalysis, o: number, r: number, subtract: number): Float64Array {
    const { period, bands, step } = this.spec;
    const { features } = this.geometry;
    const logs =
      subtract > 0
        ? floorSubtracted(analysis, o, subtract, features, this.spec.floorQuantile ?? 0.1)
        : analysis.offsets[o]!;
    const weights = analysis.weights[o];
    const frames = logs.length / features;
    const agree = new Float64Array(CLASSES);
    const count = new Float64Array(CLASSES);
    // Per (frame, band) code symbol: its class (−1: none) and its phase against the lattice of a 0.
    const classOf = new Int8Array(frames * bands).fill(-1);
    const phase = new Float64Array(frames * bands);
    for (let j = 0; j < frames; j++) {
      const embedded = ((j % period) + r) % period;
      for (let b = 0; b < bands; b++) {
        const f = this.feature(logs, j * features, b);
        if (f === null) continue;
        const reliability = weights ? weights[j * bands + b]! : 1;
        const db = -10 * Math.log10(Math.max(1e-6, 1 - reliability));
        const c = Math.min(CLASSES - 1, Math.floor(db / CLASS_DB));
        const slot = embedded * bands + b;
        const role = this.layout.role[slot]!;
        if (role >= 0) {
          classOf[j * bands + b] = c;
          phase[j * bands + b] = (2 * Math.PI * (f - this.layout.dither[slot]!)) / step;
        } else {
          const target = this.layout.dither[slot]! + (this.layout.sync[-1 - role]! * step) / 2;
          agree[c] = agree[c]! + Math.cos((2 * Math.PI * (f - target)) / step);
          count[c] = count[c]! + 1;
        }
      }
    }
    const kappa = new Float64Array(CLASSES);
    for (let c = 0; c < CLASSES; c++) {
      // A class that disagrees (or is mere noise) gets no vote; R is capped where κ would run away.
      const mean = Math.min(0.95, Math.max(0, agree[c]! / (count[c]! + CLASS_PRIOR)));
      kappa[c] = (mean * (2 - mean * mean)) / (1 - mean * mean);
    }
    const soft = new Float64Array(this.codeBits);
    for (let j = 0; j < frames; j++) {
      const embedded = ((j % period) + r) % period;
      for (let b = 0; b < bands; b++) {
        const c = classOf[j * bands + b]!;
        if (c < 0) continue;
        const role = this.layout.role[embedded * bands + b]!;
        soft[role] = soft[role]! + kappa[c]! * Math.cos(phase[j * bands + b]!);
      }
    }
    return soft;
  }

  /** One scale under one weight power: the sync search over the folded votes, then its best grids decoded in turn. */
  private decodeScale(analysis: ScaleAnalysis, power: number): AudioDetection | null {
    const fold = this.fold(analysis, power);
    for (const { offset: o, shift: r, z } of this.rankedGrids(fold).slice(0, this.spec.candidates)) {
      const read = this.readGrid(analysis, power, fold, o, r, z);
      if (!read) continue;
      const confidence = this.confidenceOf(read);
      if (confidence < this.spec.minConfidence) continue;
      const payload = bytesOf(read.message.subarray(0, this.spec.payloadBits));
      return { payload, confidence, offset: analysis.offsetSamples[o]!, shift: r, scale: analysis.scale };
    }
    return null;
  }

  /**
   * Folded phasors e^{2πi f/Δ} per (offset, frame position, band), each weighted by its symbol's reliability:
   * every repetition onto one period.
   */
  private fold(analysis: ScaleAnalysis, power: number): Fold {
    const { period, bands, step } = this.spec;
    const { features } = this.geometry;
    const offsets = analysis.offsets.length;
    const cells = offsets * period * bands;
    const re = new Float64Array(cells);
    const im = new Float64Array(cells);
    const mass = new Float64Array(cells);
    for (let o = 0; o < offsets; o++) {
      const logs = analysis.offsets[o]!;
      const weights = analysis.weights[o];
      const frames = logs.length / features;
      for (let j = 0; j < frames; j++) {
        for (let b = 0; b < bands; b++) {
          const w = weights ? (power === 1 ? weights[j * bands + b]! : weights[j * bands + b]! ** power) : 1;
          if (w <= 0) continue;
          const f = this.feature(logs, j * features, b);
          if (f === null) continue;
          const angle = (2 * Math.PI * f) / step;
          const cell = (o * period + (j % period)) * bands + b;
          re[cell] = re[cell]! + w * Math.cos(angle);
          im[cell] = im[cell]! + w * Math.sin(angle);
          mass[cell] = mass[cell]! + w;
        }
      }
    }
    return { offsets, re, im, mass };
  }

  /** The votes at a folded cell for the lattice at `target`: Σ w cos(2π(f − target)/Δ) = Re(e^{−2πi target/Δ} · fold). */
  private vote(fold: Fold, cell: number, target: number): number {
    const angle = (2 * Math.PI * target) / this.spec.step;
    return Math.cos(angle) * fold.re[cell]! + Math.sin(angle) * fold.im[cell]!;
  }

  /** Every grid (offset o, shift r) the sync symbols vote on, best agreement first. */
  private rankedGrids(fold: Fold): Array<{ score: number; offset: number; shift: number; z: number }> {
    const { period, bands, step } = this.spec;
    const ranked: Array<{ score: number; offset: number; shift: number; z: number }> = [];
    for (let o = 0; o < fold.offsets; o++) {
      for (let r = 0; r < period; r++) {
        let agree = 0;
        let total = 0;
        let spread = 0;
        for (let p = 0; p < period; p++) {
          const embedded = (p + r) % period;
          for (let b = 0; b < bands; b++) {
            const slot = embedded * bands + b;
            const role = this.layout.role[slot]!;
            const cell = (o * period + p) * bands + b;
            if (role >= 0 || fold.mass[cell] === 0) continue;
            agree += this.vote(fold, cell, this.layout.dither[slot]! + (this.layout.sync[-1 - role]! * step) / 2);
            total += fold.mass[cell]!;
            spread += fold.re[cell]! ** 2 + fold.im[cell]! ** 2;
          }
        }
        // z: the sync votes over their spread. With no mark each cell's vote is |F| cos of a keyed uniform phase,
        // independent across cells, so by Hoeffding P(z ≥ a) ≤ exp(−a²/2) whatever the audio.
        if (total > 0) ranked.push({ score: agree / total, offset: o, shift: r, z: agree / Math.sqrt(spread) });
      }
    }
    ranked.sort((a, b) => b.score - a.score);
    return ranked;
  }

  /**
   * The message read at grid (o, r) whose check passes, with the votes it was read from: the plain votes first,
   * then (at the first scale and weight power only) each calibrated set in turn; null when none reads.
   */
  private readGrid(
    analysis: ScaleAnalysis,
    power: number,
    fold: Fold,
    o: number,
    r: number,
    z: number,
  ): { message: Uint8Array; soft: Float64Array } | null {
    const soft = this.codeVotes(fold, o, r);
    // A grid the sync pattern vouches for (a z that unmarked audio reaches with odds under e^−z²/2) is worth a
    // longer list: under noise its right path is sometimes past the 8th.
    const list = analysis.scale !== 1 ? 1 : z >= this.spec.closeSyncZ ? this.spec.closeListPaths : this.spec.listPaths;
    // The calibrated decodes are built only when the plain one fails (most reads of a marked copy stop at it).
    const calibrated = analysis.scale === 1 && power === this.spec.weightPowers[0] ? this.spec.calibrated : [];
    for (let attempt = 0; attempt <= calibrated.length; attempt++) {
      const votes = attempt === 0 ? soft : this.calibratedSoft(analysis, o, r, calibrated[attempt - 1]!);
      const paths =
        list > 1 ? listViterbiDecode(votes, this.messageBits, list) : [viterbiDecode(votes, this.messageBits)];
      const message = paths.find((path) => this.checkPasses(path));
      if (message) return { message, soft: votes };
    }
    return null;
  }

  /**
   * Each code bit's summed vote at grid (o, r): positive for 0 (the lattice at the dither), negative for 1, as
   * viterbiDecode reads it; a cell's vote mass is its reliability, so a well-heard bit outweighs a faint one.
   */
  private codeVotes(fold: Fold, o: number, r: number): Float64Array {
    const { period, bands } = this.spec;
    const soft = new Float64Array(this.codeBits);
    for (let p = 0; p < period; p++) {
      const embedded = (p + r) % period;
      for (let b = 0; b < bands; b++) {
        const slot = embedded * bands + b;
        const role = this.layout.role[slot]!;
        const cell = (o * period + p) * bands + b;
        if (role < 0 || fold.mass[cell] === 0) continue;
        soft[role] = this.vote(fold, cell, this.layout.dither[slot]!);
      }
    }
    return soft;
  }

  /** The votes' weight that agrees with the message re-encoded, net of the weight against it, as a share (floor 0). */
  private confidenceOf(read: { message: Uint8Array; soft: Float64Array }): number {
    const recoded = convEncode(read.message);
    let agree = 0;
    let total = 0;
    for (let i = 0; i < this.codeBits; i++) {
      agree += recoded[i] ? -read.soft[i]! : read.soft[i]!;
      total += Math.abs(read.soft[i]!);
    }
    return total > 0 ? Math.max(0, agree / total) : 0;
  }
}

/** The votes of one scale folded onto one period, per (offset, frame position, band) cell. */
interface Fold {
  readonly offsets: number;
  readonly re: Float64Array;
  readonly im: Float64Array;
  readonly mass: Float64Array;
}

/** The group log-energies of every frame at each candidate offset, for one playback-rate scale. */
interface ScaleAnalysis {
  readonly scale: number;
  readonly offsets: ReadonlyArray<Float32Array>;
  /** Per offset, per (frame, band): the symbol's reliability, 0..1; absent when every symbol votes alike. */
  readonly weights: ReadonlyArray<Float32Array | undefined>;
  readonly offsetSamples: ReadonlyArray<number>;
  /** floorSubtracted's log-energies, by "offset|share": made when a calibrated decode first asks, shared by every key. */
  readonly floorSubtracted: Map<string, Float32Array>;
}

/**
 * The key-independent part of detection for one spec, made once per file and decoded under each key: the group
 * log-energies of the file's first detectMaxSeconds, at each scale, computed when first read (a mark found at
 * scale 1 never pays for the others).
 */
export class ContrastAnalysis {
  private readonly head: Float32Array;
  private readonly scales: Array<ScaleAnalysis | undefined>;

  constructor(
    readonly spec: ContrastQimSpec,
    samples: Float32Array,
  ) {
    this.head = samples.subarray(0, Math.min(samples.length, spec.detectMaxSeconds * spec.sampleRate));
    this.scales = spec.scales.map(() => undefined);
  }

  at(index: number): ScaleAnalysis {
    const known = this.scales[index];
    if (known) return known;
    const scale = this.spec.scales[index]!;
    const { rescaledSeconds, sampleRate } = this.spec;
    const samples = scale === 1 ? this.head : stretched(this.head.subarray(0, rescaledSeconds * sampleRate), scale);
    const analysis = analyseScale(this.spec, samples, scale);
    this.scales[index] = analysis;
    return analysis;
  }
}

/**
 * The group log-energies at offset o with `share` of each group's floor power (its `quantile` over the frames) taken
 * off, made once per offset and share and kept with the analysis (they do not depend on the key).
 */
function floorSubtracted(
  analysis: ScaleAnalysis,
  o: number,
  share: number,
  features: number,
  quantile: number,
): Float32Array {
  const id = `${o}|${share}`;
  const cached = analysis.floorSubtracted.get(id);
  if (cached) return cached;
  const logs = analysis.offsets[o]!;
  const frames = logs.length / features;
  const out = new Float32Array(logs.length);
  const column = new Float64Array(frames);
  for (let g = 0; g < features; g++) {
    for (let j = 0; j < frames; j++) {
      const l = logs[j * features + g]!;
      column[j] = Number.isNaN(l) ? 0 : Math.exp(2 * l);
    }
    column.sort();
    const floor = share * (column[Math.min(frames - 1, Math.floor(quantile * frames))] ?? 0);
    for (let j = 0; j < frames; j++) {
      const l = logs[j * features + g]!;
      const power = Math.exp(2 * l);
      out[j * features + g] = Number.isNaN(l)
        ? Number.NaN
        : 0.5 * Math.log(Math.max(power - floor, FLOOR_KEEP * power));
    }
  }
  analysis.floorSubtracted.set(id, out);
  return out;
}

/**
 * A copy played `scale` times faster, read back at the original rate: `scale` times longer, by linear
 * interpolation. Its droop (−1.5 dB at 3.6 kHz) is a smooth tilt that the contrasts of adjacent groups cancel, and
 * it costs a few milliseconds a minute where the sinc resampler would cost more than the analysis itself.
 */
function stretched(samples: Float32Array, scale: number): Float32Array {
  const out = new Float32Array(Math.max(0, Math.floor((samples.length - 1) * scale)));
  for (let n = 0; n < out.length; n++) {
    const x = n / scale;
    const i = Math.floor(x);
    const frac = x - i;
    out[n] = samples[i]! + frac * (samples[i + 1]! - samples[i]!);
  }
  return out;
}

function analyseScale(spec: ContrastQimSpec, samples: Float32Array, scale: number): ScaleAnalysis {
  const { frame, firstBin, offsetStep } = spec;
  const geometry = geometryOf(spec);
  const re = new Float64Array(frame);
  const im = new Float64Array(frame);
  const a = { re: new Float64Array(frame), im: new Float64Array(frame) };
  const b = { re: new Float64Array(frame), im: new Float64Array(frame) };
  const offsets: Float32Array[] = [];
  const weights: Array<Float32Array | undefined> = [];
  const offsetSamples: number[] = [];
  for (let o = 0; o < frame; o += offsetStep) {
    const frames = Math.max(0, Math.floor((samples.length - o) / frame));
    const logs = new Float32Array(frames * geometry.features);
    // Two real frames per complex transform: one in the real part, the next in the imaginary part.
    for (let j = 0; j < frames; j += 2) {
      const first = o + j * frame;
      const second = j + 1 < frames ? first + frame : -1;
      for (let i = 0; i < frame; i++) {
        re[i] = HANN[i]! * samples[first + i]!;
        im[i] = second >= 0 ? HANN[i]! * samples[second + i]! : 0;
      }
      fft(re, im);
      for (let k = firstBin; k < geometry.lastBin; k++) {
        const m = frame - k;
        // X_k = (Z_k + conj Z_{N−k}) / 2, Y_k = (Z_k − conj Z_{N−k}) / 2i.
        a.re[k] = (re[k]! + re[m]!) / 2;
        a.im[k] = (im[k]! - im[m]!) / 2;
        b.re[k] = (im[k]! + im[m]!) / 2;
        b.im[k] = (re[m]! - re[k]!) / 2;
      }
      groupLogs(geometry, frame, a.re, a.im, logs, j * geometry.features);
      if (second >= 0) groupLogs(geometry, frame, b.re, b.im, logs, (j + 1) * geometry.features);
    }
    offsets.push(logs);
    weights.push(
      spec.floorQuantile === null ? undefined : reliability(spec, geometry, logs, frames, spec.floorQuantile),
    );
    offsetSamples.push(o);
  }
  return { scale, offsets, weights, offsetSamples, floorSubtracted: new Map() };
}

/**
 * How much each (frame, band) symbol can be trusted: 1 − floor/power, where a band's floor is a low quantile of its
 * power over the file (the noise under everything, the room's or added later). A symbol at the floor is noise read
 * as a mark and gets no vote; one well above it a full vote. A clean file's pauses weigh little too: its louder
 * frames carry the mark with room to spare.
 */
function reliability(
  spec: ContrastQimSpec,
  geometry: Geometry,
  logs: Float32Array,
  frames: number,
  quantile: number,
): Float32Array {
  const { bands, groups } = spec;
  const power = new Float64Array(frames * bands);
  for (let j = 0; j < frames; j++)
    for (let b = 0; b < bands; b++) {
      let sum = 0;
      for (let g = 0; g < groups; g++) {
        const l = logs[j * geometry.features + b * groups + g]!;
        if (!Number.isNaN(l)) sum += Math.exp(2 * l);
      }
      power[j * bands + b] = sum / groups;
    }
  const weights = new Float32Array(frames * bands);
  const column = new Float64Array(frames);
  for (let b = 0; b < bands; b++) {
    for (let j = 0; j < frames; j++) column[j] = power[j * bands + b]!;
    column.sort();
    const floor = column[Math.min(frames - 1, Math.floor(quantile * frames))] ?? 0;
    for (let j = 0; j < frames; j++) {
      const p = power[j * bands + b]!;
      weights[j * bands + b] = p > 0 ? Math.max(0, 1 - floor / p) : 0;
    }
  }
  return weights;
}
