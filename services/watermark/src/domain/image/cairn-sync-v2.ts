import { createHmac } from 'node:crypto';
import { WATERMARK_ALG } from '@cairn/catalog';
import type { Detection, ImageWatermarkAlgorithm } from './algorithm.js';
import { boxMean } from './box-mean.js';
import { codedLength, convEncode, listViterbiDecode, viterbiDecode } from './conv-code.js';
import { fft2d, nextPowerOfTwo } from '@cairn/media/fft';
import { FRAME_BITS, frameBits, PAYLOAD_BYTES, unframe } from './frame.js';
import { describeContent, type SyncGeometry } from './content-registration.js';
import { LumaResampler, lumaGrid } from './luma.js';
import { payloadHex } from '../payload.js';
import { psnrOfChange } from './psnr.js';
import { keyedRandom, permutation } from './prng.js';
import { assertWellFormed, ImageRejectedError, type RawImage } from './raw-image.js';
import type { Kernel1D } from './resample.js';

/**
 * cairn-sync-v2: a keyed spread-spectrum tile repeated over the picture, found again by its own periodicity.
 * Crops, borders, rotations, flips, aspect and scale changes all keep the tiling a lattice; the detector
 * measures that lattice (autocorrelation), folds the picture onto one tile, and finds the tile's offset and
 * orientation by correlating with a keyed reference half of the tile. See services/watermark/docs/image.md.
 */
export const CAIRN_SYNC_V2_NAME = WATERMARK_ALG.syncV2;

/** Chips per tile side. */
const TILE = 32;
/** Grid samples per chip side (at the embedding scale). */
const CHIP = 1;
/** Fold bins per tile side: half a chip each, so an unknown offset costs at most a quarter chip. */
const BINS = TILE * 2;
const CHIPS = TILE * TILE;
/**
 * Working grid area: the image is resampled to about 256² samples whatever its size (scale invariance). Video
 * marks small frames on a coarser grid (domain/video) and names the area to analyseSync.
 */
export const GRID_AREA = 256 * 256;
const CODED_BITS = codedLength(FRAME_BITS);
/** Chips of each tile that carry the keyed reference (the rest carry the coded payload). */
const REFERENCE_CHIPS = CHIPS / 4;
/**
 * The detector reads on a grid 1.25× finer than the embedder's, so a chip stays wider than a sample when the
 * picture shrinks inside its frame (borders, aspect squeeze) instead of aliasing away.
 */
const DETECT_OVERSAMPLING = 1.25;
/**
 * The grid a failed read is tried again on, once the lattice is known: chips of a picture halved and re-encoded are
 * barely wider than a sample of the detection grid, and the resampling to it averages them away.
 */
const FINE_OVERSAMPLING = 2;
/** Period search range in detection grid samples: nominally TILE · CHIP · 1.25 = 40, ×0.6–1.5. */
const MIN_PERIOD = 24;
const MAX_PERIOD = 60;
/**
 * Alignments (orientation and offset) tried through the decoder after refinement; each is one 2⁻³² chance for the
 * check, plus one read before refinement when the alignment is sure: at most 4 per key.
 */
const CANDIDATES = 3;
/** Paths of the list Viterbi decoder tried against the check per read, best first. */
const LIST_PATHS = 32;
/** Autocorrelation peaks considered, and lattices (pairs of them) tried by folding. */
/** Hill-climbing steps (grid samples) of the lattice refinement. */
const REFINE_STEPS = [0.3, 0.1, 0.04];
const REFINE_ROUNDS = 6;
/** An alignment z-score that settles the lattice search (chance reaches about 5). */
const SURE_ALIGNMENT = 8;
/**
 * A read on the lattice as found at or above this confidence (raw code-bit errors ≤ 5 %) is answered without
 * refinement. Below it the refined lattice is read too: after JPEG q75 of coffee and chelsea (600×400 and 451×300,
 * 150 keys each) it raised the mean confidence from 0.84 and 0.78 to 0.90 and 0.84, the lowest from 0.63 and 0.37
 * to 0.75 and 0.67.
 */
const CLEAR_READ = 0.8;
/** The z-score below which a lattice is not refined (see decodeRegistered). */
const PLAUSIBLE_ALIGNMENT = 5;
/** Side of the autocorrelation window (power of two). */
const AUTOCORRELATION_SIDE = 256;
const PEAKS = 10;
/** The strongest peaks, each paired with its best partner among all peaks. */
const STRONGEST = 3;
/** Multiples of a lattice vector its autocorrelation peak is confirmed and measured with. */
const HARMONICS = 3;
const PAIRS = 8;

export interface SyncParameters {
  /**
   * Root-mean-square luma change of the mark (levels): the video mark's strength (LumaFrameMarker), and where the
   * image embedding's calibration to psnrDb starts.
   */
  readonly strengthRms: number;
  /** PSNR of an image marked by embed (colour samples, after rounding and clamping). */
  readonly psnrDb: number;
  /** Detections clearer than this only: a guard behind the 32-bit check. */
  readonly minConfidence: number;
  readonly minEmbedSize: number;
  readonly minDetectSize: number;
}

export const CAIRN_SYNC_V2: SyncParameters = {
  strengthRms: 1.85,
  psnrDb: 42.4,
  minConfidence: 0.2,
  minEmbedSize: 256,
  minDetectSize: 96,
};

/** HMAC-SHA256(key, "cairn-sync-v2|" + purpose): the secret of one use of the key. */
function deriveSyncSecret(key: Uint8Array, purpose: 'layout'): Buffer {
  if (key.length !== 32) throw new Error('a watermark key is 32 bytes');
  return createHmac('sha256', key).update(`${CAIRN_SYNC_V2_NAME}|${purpose}|`, 'utf8').digest();
}

interface TileLayout {
  /** ±1 on reference chips, 0 on data chips. */
  readonly reference: Float64Array;
  /** ±1 spreading sign on data chips, 0 on reference chips. */
  readonly spread: Float64Array;
  /** Coded bit carried by a data chip (-1 on reference chips). */
  readonly bitOf: Int16Array;
  readonly votes: Float64Array;
  /** The reference in bins under each of the 8 orientations of the square, and their spectra. */
  readonly referenceBins: ReadonlyArray<Float64Array>;
  readonly referenceSpectra: ReadonlyArray<{ readonly re: Float64Array; readonly im: Float64Array }>;
}

/** The 8 symmetries of the square on the bin torus: a 90° rotation or a flip of the picture is one of them. */
const DIHEDRAL: ReadonlyArray<{ swap: boolean; fx: boolean; fy: boolean }> = [false, true].flatMap((swap) =>
  [false, true].flatMap((fx) => [false, true].map((fy) => ({ swap, fx, fy }))),
);

function orient(d: { swap: boolean; fx: boolean; fy: boolean }, u: number, v: number): number {
  let p = d.swap ? v : u;
  let q = d.swap ? u : v;
  if (d.fx) p = BINS - 1 - p;
  if (d.fy) q = BINS - 1 - q;
  return (q >> 1) * TILE + (p >> 1);
}

function buildLayout(key: Uint8Array): TileLayout {
  const random = keyedRandom(deriveSyncSecret(key, 'layout'));
  const order = permutation(CHIPS, random);
  const reference = new Float64Array(CHIPS);
  const spread = new Float64Array(CHIPS);
  const bitOf = new Int16Array(CHIPS).fill(-1);
  const votes = new Float64Array(CODED_BITS);
  for (let i = 0; i < CHIPS; i++) {
    const chip = order[i]!;
    const sign = random() < 0.5 ? -1 : 1;
    if (i < REFERENCE_CHIPS) reference[chip] = sign;
    else {
      const bit = (i - REFERENCE_CHIPS) % CODED_BITS;
      spread[chip] = sign;
      bitOf[chip] = bit;
      votes[bit]!++;
    }
  }
  const referenceBins = DIHEDRAL.map((d) => {
    const bins = new Float64Array(BINS * BINS);
    for (let v = 0; v < BINS; v++) for (let u = 0; u < BINS; u++) bins[v * BINS + u] = reference[orient(d, u, v)]!;
    return bins;
  });
  const referenceSpectra = referenceBins.map((bins) => {
    const re = Float64Array.from(bins);
    const im = new Float64Array(BINS * BINS);
    fft2d(re, im, BINS, BINS);
    return { re, im };
  });
  return { reference, spread, bitOf, votes, referenceBins, referenceSpectra };
}

/** The highest value of a correlation plane, as an alignment with its z-score over all offsets. */
function peakOf(correlation: Float64Array, d: number): Alignment {
  let best = 0;
  let energy = 0;
  for (let i = 0; i < correlation.length; i++) {
    energy += correlation[i]! * correlation[i]!;
    if (correlation[i]! > correlation[best]!) best = i;
  }
  return {
    d,
    shift: best,
    score: energy > 0 ? correlation[best]! / Math.sqrt(energy / correlation.length) : 0,
  };
}

/** Grid size for an image: about `area` samples (GRID_AREA for images) with the image's aspect ratio. */
export function gridSize(width: number, height: number, oversampling = 1, area = GRID_AREA): [number, number] {
  const s = oversampling * Math.sqrt(area / (width * height));
  return [Math.max(16, Math.round(width * s)), Math.max(16, Math.round(height * s))];
}

/** An orientation of the square, the reference's offset in a fold (v · BINS + u) and the correlation's z-score there. */
interface Alignment {
  readonly d: number;
  readonly shift: number;
  readonly score: number;
}

/**
 * The reference's correlation with a fold at the 3×3 offsets around (sx, sy), the best of them, over the
 * fold's norm (so folds of different lattices compare).
 */
function localCorrelation(
  folded: Float64Array,
  reference: Float64Array,
  sx: number,
  sy: number,
): { value: number; sx: number; sy: number } {
  let norm = 0;
  for (let i = 0; i < folded.length; i++) norm += folded[i]! * folded[i]!;
  let best = { value: -Infinity, sx, sy };
  for (let ey = -1; ey <= 1; ey++) {
    for (let ex = -1; ex <= 1; ex++) {
      const ox = (sx + ex + BINS) & (BINS - 1);
      const oy = (sy + ey + BINS) & (BINS - 1);
      let sum = 0;
      // F(w) ≈ R(w − offset): sum F(u + offset) · R(u).
      for (let v = 0; v < BINS; v++) {
        const row = ((v + oy) & (BINS - 1)) * BINS;
        const refRow = v * BINS;
        for (let u = 0; u < BINS; u++) sum += folded[row + ((u + ox) & (BINS - 1))]! * reference[refRow + u]!;
      }
      if (sum > best.value) best = { value: sum, sx: ox, sy: oy };
    }
  }
  return { ...best, value: norm > 0 ? best.value / Math.sqrt(norm) : 0 };
}

/** A finer detection grid of the same picture: its residual, and its samples per sample of the detection grid. */
interface FineGrid {
  readonly residual: Float64Array;
  readonly width: number;
  readonly height: number;
  readonly kx: number;
  readonly ky: number;
}

/** The picture folded onto one candidate lattice (a, b), with the fold's spectrum. */
interface Fold {
  readonly a: Vector;
  readonly b: Vector;
  readonly folded: Float64Array;
  readonly re: Float64Array;
  readonly im: Float64Array;
}

/**
 * What detection learns from an image before any key is involved: the whitened grid and the candidate
 * lattices, folded on first use (a detection that succeeds on the first lattice folds no other). Shared by
 * every key tried.
 */
export class SyncAnalysis {
  private readonly folds = new Map<number, Fold | null>();
  private found: ReadonlyArray<readonly [Vector, Vector]> | null = null;

  constructor(
    /** The detection grid's luma (content registration compares it with the asset's). */
    readonly luma: Float32Array,
    readonly residual: Float64Array,
    readonly width: number,
    readonly height: number,
    private readonly nominal: readonly [Vector, Vector],
    private readonly image: RawImage | null = null,
  ) {}

  private fineGrid: FineGrid | null | undefined;

  /**
   * The picture on a grid FINE_OVERSAMPLING / DETECT_OVERSAMPLING times finer than this one, whitened (made on first
   * use: only a read that failed on this grid asks for it). Null without the image, or when it would not be finer.
   */
  fine(): FineGrid | null {
    if (this.fineGrid === undefined) {
      this.fineGrid = null;
      if (this.image && FINE_OVERSAMPLING > DETECT_OVERSAMPLING) {
        const ratio = FINE_OVERSAMPLING / DETECT_OVERSAMPLING;
        const [fw, fh] = [Math.round(this.width * ratio), Math.round(this.height * ratio)];
        if (fw > this.width && fh > this.height) {
          const residual = whiten(lumaGrid(this.image, fw, fh), fw, fh);
          this.fineGrid = { residual, width: fw, height: fh, kx: fw / this.width, ky: fh / this.height };
        }
      }
    }
    return this.fineGrid;
  }

  /**
   * The lattice as embedded first (most edits, re-encoding, filters, resizing, leave it as it was), then the
   * autocorrelation's candidates, searched only when asked for.
   */
  lattice(index: number): readonly [Vector, Vector] | undefined {
    if (index === 0) return this.nominal;
    this.found ??= latticeCandidates(this.residual, this.width, this.height, this.nominal);
    return this.found[index - 1];
  }

  fold(index: number): Fold | null {
    if (!this.folds.has(index)) {
      const lattice = this.lattice(index);
      if (!lattice) return null;
      const [a, b] = lattice;
      const folded = fold(this.residual, this.width, this.height, a, b);
      this.folds.set(index, folded ? { a, b, ...withSpectrum(folded) } : null);
    }
    return this.folds.get(index)!;
  }
}

export class SyncTileWatermark implements ImageWatermarkAlgorithm {
  readonly name = CAIRN_SYNC_V2_NAME;
  readonly payloadBytes = PAYLOAD_BYTES;
  readonly minEmbedSize: number;
  private readonly layout: TileLayout;

  constructor(
    key: Uint8Array,
    private readonly params: SyncParameters = CAIRN_SYNC_V2,
  ) {
    this.minEmbedSize = params.minEmbedSize;
    this.layout = buildLayout(key);
  }

  embed(image: RawImage, payload: Uint8Array): RawImage {
    return this.embedDescribed(image, payload).image;
  }

  /**
   * Embeds, and describes the content the mark was put on (a coarse luma map of the embedding grid, see
   * content-registration.ts): the registry keeps it, so a detection can tell the asset's content from other
   * content carrying a copied mark. Answers the marked image's PSNR too (measured as the samples are written).
   * With `inPlace` the caller hands `image`'s buffer over and gets it back marked (no copy of the pixels).
   */
  embedDescribed(
    image: RawImage,
    payload: Uint8Array,
    { inPlace = false, level: chosen = 0 }: { inPlace?: boolean; level?: number | LevelChooser } = {},
  ): { image: RawImage; content: Uint8Array; psnrDb: number; level: number } {
    assertWellFormed(image);
    const { width, height } = image;
    if (width < this.minEmbedSize || height < this.minEmbedSize) {
      throw new ImageRejectedError(
        `image is ${width}×${height}; a watermark needs at least ${this.minEmbedSize}×${this.minEmbedSize} pixels`,
      );
    }
    const [gw, gh] = gridSize(width, height);
    const resampler = new LumaResampler(width, height, gw, gh);
    const luma = resampler.grid(image);
    const level = typeof chosen === 'number' ? chosen : chosen(image, luma, gw, gh);
    const strength = SYNC_STRENGTH_LEVELS[level];
    if (!strength) throw new Error(`no embedding strength level ${level}`);
    // Level 0 keeps the parameters this mark was made with (video and tests may set their own PSNR).
    const weight = maskingWeights(luma, gw, gh, strength.mask);
    const psnrTarget = level === 0 ? this.params.psnrDb : strength.psnrDb;
    const code = convEncode(frameBits(payload));
    const { reference, spread, bitOf } = this.layout;
    const tile = new Float64Array(CHIPS);
    for (let c = 0; c < CHIPS; c++)
      tile[c] = bitOf[c]! < 0 ? reference[c]! : code[bitOf[c]!] ? -spread[c]! : spread[c]!;
    const delta = new Float32Array(gw * gh);
    // Chip (x, y) of the tiling is tile[(y mod TILE) · TILE + x mod TILE] (CHIP is one grid sample).
    for (let y = 0; y < gh; y++) {
      const row = (y & (TILE - 1)) * TILE;
      const o = y * gw;
      for (let x = 0; x < gw; x++) delta[o + x] = tile[row + (x & (TILE - 1))]! * weight[o + x]!;
    }
    // The strength is set on what reaches the pixels (after enlargement), so PSNR is the same at every size.
    const gain = calibratedGain(image, delta, this.params.strengthRms, psnrTarget, resampler);
    for (let i = 0; i < delta.length; i++) delta[i]! *= gain;
    const marked: RawImage = inPlace ? image : { ...image, pixels: image.pixels.slice() };
    const squaredError = resampler.addDelta(marked, delta);
    return {
      image: marked,
      content: describeContent(luma, gw, gh),
      psnrDb: psnrOfChange(image, squaredError),
      level,
    };
  }

  detect(image: RawImage): Detection | null {
    const analysis = analyseSync(image, this.params.minDetectSize);
    return analysis ? this.decode(analysis) : null;
  }

  /**
   * Reads the payload: the candidate lattice whose fold correlates best with the keyed reference (a matched
   * statistic, far sharper than the blind autocorrelation that proposed it), refined, then the best
   * orientations and offsets through Viterbi and the check.
   */
  decode(analysis: SyncAnalysis): Detection | null {
    return this.decodeRegistered(analysis)?.detection ?? null;
  }

  /** As decode, with where the detection grid lies on the embedding grid (modulo the tile) when it reads. */
  decodeRegistered(analysis: SyncAnalysis): { detection: Detection; geometry: SyncGeometry } | null {
    let best: { fold: Fold; alignment: Alignment } | null = null;
    for (let i = 0; analysis.lattice(i); i++) {
      const fold = analysis.fold(i);
      if (!fold) continue;
      const alignment = this.align(fold)[0]!;
      if (!best || alignment.score > best.alignment.score) best = { fold, alignment };
      // A z-score this high does not happen by chance (noise tops out near 5 over 8 × 4,096 offsets).
      if (alignment.score >= SURE_ALIGNMENT) break;
    }
    if (!best) return null;
    // A sure alignment on the lattice as found usually reads without refinement (the picture was re-encoded,
    // filtered or resized, not cropped far off its grid): one read, and the refinement's hundred folds are saved
    // when that read is clear. A weak one is kept while the refined lattice is read too, and the clearer answers.
    let sure: { detection: Detection; geometry: SyncGeometry } | null = null;
    if (best.alignment.score >= SURE_ALIGNMENT) {
      const { d, shift } = best.alignment;
      const [sx, sy] = [shift % BINS, Math.floor(shift / BINS)];
      const detection = this.read(best.fold.folded, DIHEDRAL[d]!, sx, sy);
      if (detection) sure = { detection, geometry: geometryOf(best.fold.a, best.fold.b, DIHEDRAL[d]!, sx, sy) };
      if (sure && sure.detection.confidence >= CLEAR_READ) return sure;
    }
    // Below this no mark has been read in measurement (reads start at z 6.4), while most unmarked pictures stop
    // here (93 % of 150 at z < 5): the refinement and its reads are skipped.
    if (best.alignment.score < PLAUSIBLE_ALIGNMENT) return null;
    const refined = this.refine(analysis, best.fold, best.alignment);
    for (const { d, shift } of this.align(refined).slice(0, CANDIDATES)) {
      const [sx, sy] = [shift % BINS, Math.floor(shift / BINS)];
      const detection = this.read(refined.folded, DIHEDRAL[d]!, sx, sy);
      if (!detection) continue;
      // Each read passed the 32-bit check; two different payloads are beyond chance, and the first read stands.
      if (
        sure &&
        !(
          payloadHex(sure.detection.payload) === payloadHex(detection.payload) &&
          detection.confidence > sure.detection.confidence
        )
      )
        return sure;
      return { detection, geometry: geometryOf(refined.a, refined.b, DIHEDRAL[d]!, sx, sy) };
    }
    if (sure) return sure;
    // The same lattice on the finer grid, folded into the same tile coordinates (so the geometry is the refined one's).
    const fine = analysis.fine();
    const folded = fine && fineFold(fine, refined.a, refined.b);
    if (!folded) return null;
    const fineFolded = { a: refined.a, b: refined.b, ...withSpectrum(folded) };
    for (const { d, shift } of this.align(fineFolded).slice(0, CANDIDATES)) {
      const [sx, sy] = [shift % BINS, Math.floor(shift / BINS)];
      const detection = this.read(folded, DIHEDRAL[d]!, sx, sy);
      if (detection) return { detection, geometry: geometryOf(refined.a, refined.b, DIHEDRAL[d]!, sx, sy) };
    }
    return null;
  }

  /**
   * Sharpens a lattice found by autocorrelation (to a fraction of a sample, which over ten periods is chips
   * off) by hill-climbing over the four coordinates of the two lattice vectors. The objective is the
   * reference correlation at the offsets around the one found, over the fold's norm: direct sums over one
   * tile, no transform per step.
   */
  private refine(analysis: SyncAnalysis, start: Fold, alignment: Alignment): Fold {
    const reference = this.layout.referenceBins[alignment.d]!;
    let sx = alignment.shift % BINS;
    let sy = Math.floor(alignment.shift / BINS);
    let a: Vector = start.a;
    let b: Vector = start.b;
    let best = localCorrelation(start.folded, reference, sx, sy);
    let moved = false;
    for (const step of REFINE_STEPS) {
      let improved = true;
      for (let round = 0; improved && round < REFINE_ROUNDS; round++) {
        improved = false;
        for (let coordinate = 0; coordinate < 4; coordinate++) {
          for (const sign of [-1, 1]) {
            const ta: [number, number] = [a[0], a[1]];
            const tb: [number, number] = [b[0], b[1]];
            (coordinate < 2 ? ta : tb)[coordinate % 2]! += sign * step;
            const folded = fold(analysis.residual, analysis.width, analysis.height, ta, tb);
            if (!folded) continue;
            const trial = localCorrelation(folded, reference, sx, sy);
            if (trial.value > best.value) {
              [a, b, best, sx, sy] = [ta, tb, trial, trial.sx, trial.sy];
              improved = moved = true;
            }
          }
        }
      }
    }
    if (!moved) return start;
    const folded = fold(analysis.residual, analysis.width, analysis.height, a, b);
    return folded ? { a, b, ...withSpectrum(folded) } : start;
  }

  /** Per orientation, the best offset of the reference in the fold and its z-score; best first. */
  private align(fold: Fold): Alignment[] {
    const alignments: Alignment[] = [];
    for (let d = 0; d < DIHEDRAL.length; d += 2) alignments.push(...this.alignPair(fold, d, d + 1));
    return alignments.sort((p, q) => q.score - p.score);
  }

  /**
   * The best offset of the reference under orientations d1 and d2 and their z-scores over all offsets. Both
   * correlations are real, so one inverse transform carries the two: IFFT(P1 + i·P2) = c1 + i·c2.
   */
  private alignPair(fold: Fold, d1: number, d2: number): [Alignment, Alignment] {
    const r1 = this.layout.referenceSpectra[d1]!;
    const r2 = this.layout.referenceSpectra[d2]!;
    const n = BINS * BINS;
    const re = new Float64Array(n);
    const im = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      // F · conj(R): the cyclic cross-correlation, peaking at the tile's offset.
      const fr = fold.re[i]!;
      const fi = fold.im[i]!;
      const p1r = fr * r1.re[i]! + fi * r1.im[i]!;
      const p1i = fi * r1.re[i]! - fr * r1.im[i]!;
      const p2r = fr * r2.re[i]! + fi * r2.im[i]!;
      const p2i = fi * r2.re[i]! - fr * r2.im[i]!;
      re[i] = p1r - p2i;
      im[i] = p1i + p2r;
    }
    fft2d(re, im, BINS, BINS, true);
    return [peakOf(re, d1), peakOf(im, d2)];
  }

  private read(
    folded: Float64Array,
    d: { swap: boolean; fx: boolean; fy: boolean },
    sx: number,
    sy: number,
  ): Detection | null {
    const soft = this.softBits(folded, d, sx, sy);
    let scale = 0;
    for (let i = 0; i < CODED_BITS; i++) scale += Math.abs(soft[i]!);
    if (scale === 0) return null;
    // The most likely path first (what a clear mark decodes to, at the cost of one Viterbi); when it fails the
    // check, the next LIST_PATHS − 1 paths, each one more 2⁻³² chance for the check.
    let bits = viterbiDecode(soft, FRAME_BITS);
    let payload = unframe(bits);
    for (const path of payload ? [] : listViterbiDecode(soft, FRAME_BITS, LIST_PATHS).slice(1)) {
      payload = unframe(path);
      if (payload) {
        bits = path;
        break;
      }
    }
    if (!payload) return null;
    // Confidence from the raw error rate: the share of soft values whose sign disagrees with the codeword
    // decoded. A decode of noise still matches most signs (Viterbi picks the best of 2⁹⁶ paths), about 75 %,
    // so 25 % errors maps to 0 and none to 1.
    const code = convEncode(bits);
    let errors = 0;
    for (let i = 0; i < CODED_BITS; i++) if ((code[i] ? -soft[i]! : soft[i]!) < 0) errors++;
    const confidence = Math.max(0, Math.min(1, 1 - errors / CODED_BITS / 0.25));
    return confidence >= this.params.minConfidence ? { payload, confidence } : null;
  }

  /** The soft value of each coded bit at one alignment of the fold (positive: bit 0). */
  private softBits(
    folded: Float64Array,
    d: { swap: boolean; fx: boolean; fy: boolean },
    sx: number,
    sy: number,
  ): Float64Array {
    const { spread, bitOf, votes } = this.layout;
    const chips = new Float64Array(CHIPS);
    for (let v = 0; v < BINS; v++) {
      const wv = (v - sy + BINS) % BINS;
      for (let u = 0; u < BINS; u++) chips[orient(d, (u - sx + BINS) % BINS, wv)]! += folded[v * BINS + u]!;
    }
    const soft = new Float64Array(CODED_BITS);
    for (let c = 0; c < CHIPS; c++) if (bitOf[c]! >= 0) soft[bitOf[c]!]! += chips[c]! * spread[c]!;
    for (let i = 0; i < CODED_BITS; i++) soft[i]! /= votes[i]!;
    return soft;
  }
}

/**
 * Mask bounds, relative to the picture's mean local contrast. Measured (bench/watermark-quick.ts, the four
 * photos at 1 MP × 3 fixed keys, PSNR unchanged): the former 0.3–2.5 read JPEG q30 / WebP q60 / social 11 / 9 / 9 of
 * 12, 0.5–1.5 reads 12 / 11 / 11, with the mean raw code-bit errors after JPEG q30 and WebP q60 down from 6.9 and
 * 9.9 % to 4.8 and 6.9 %; astronaut's lattice after the social chain is found again. Energy piled on edges and
 * texture is mostly divided away again by the detector's whitening (host residual there is large too). Flatter
 * reads better still but costs SSIM: uniform falls to 0.967, 0.6–1.4 to 0.979 (the line is 0.98, 0.5–1.5 gives
 * 0.984); a steeper mask (exponent 1.5, up to 4×) loses more than half of those reads.
 */
const MASK_MIN = 0.5;
const MASK_MAX = 1.5;

/** Clamp of the perceptual mask, relative to the picture's mean local contrast. */
export interface MaskBounds {
  readonly min: number;
  readonly max: number;
}

const DEFAULT_MASK: MaskBounds = { min: MASK_MIN, max: MASK_MAX };

/** Chooses the strength level from the picture and its embedding-grid luma (`gw` × `gh`) as the embedding reads it. */
export type LevelChooser = (image: RawImage, luma: Float32Array, gw: number, gh: number) => number;

/**
 * The settings an embedding escalates through when its own output does not read back (app/embed-image.ts reads every
 * marked file before answering it). Level 0 is every mark's setting; the detector is the same for all of them (it
 * whitens, so neither the mask nor the gain is something it needs to know). Each level stays within the fidelity lines
 * services/watermark/docs/image-benches.md states (PSNR ≥ 42 dB, SSIM ≥ 0.98): the gain is calibrated to 42.0 dB
 * instead of 42.4 (+5 % amplitude), and the mask flattens (a flatter mask reads better: more of the mark lies where the
 * host's own residual is small, in smooth regions, which the whitening weighs most; on photos it costs SSIM, see
 * MASK_MIN, which is why it is a fallback and not the default). Flat content (plain colours, gradients, scans, line
 * art) starts at the last level: domain/image/readback.ts, startLevel.
 */
export const SYNC_STRENGTH_LEVELS: ReadonlyArray<{ readonly psnrDb: number; readonly mask: MaskBounds }> = [
  { psnrDb: CAIRN_SYNC_V2.psnrDb, mask: DEFAULT_MASK },
  { psnrDb: 42.0, mask: { min: 0.75, max: 1.25 } },
  { psnrDb: 42.0, mask: { min: 1, max: 1 } },
];

/**
 * Perceptual masking: the mark's amplitude follows the local contrast of the picture (5×5 standard deviation
 * on the grid), so textured regions carry more and flat ones (sky, skin) less, within MASK_MIN–MASK_MAX× of the mean.
 */
export function maskingWeights(
  luma: Float32Array,
  gw: number,
  gh: number,
  bounds: MaskBounds = DEFAULT_MASK,
): Float32Array {
  const { min, max } = bounds;
  const deviation = localDeviation(luma, gw, gh, 2);
  let mean = 0;
  for (let i = 0; i < deviation.length; i++) mean += deviation[i]!;
  mean /= deviation.length;
  const weight = new Float32Array(gw * gh);
  for (let i = 0; i < weight.length; i++) {
    const relative = (deviation[i]! + 1) / (mean + 1);
    weight[i] = relative < min ? min : relative > max ? max : relative;
  }
  return weight;
}

/**
 * Standard deviation over the (2·radius + 1)² neighbourhood clipped to the plane: running sums of v and v² along
 * the rows, then down the columns (the window's area shrinks at the edges).
 */
function localDeviation(plane: Float32Array, w: number, h: number, radius: number): Float32Array {
  const rowSum = new Float64Array(w * h);
  const rowSquares = new Float64Array(w * h);
  const lead = Math.min(radius, w);
  for (let y = 0; y < h; y++) {
    const o = y * w;
    let s = 0;
    let q = 0;
    for (let x = 0; x < lead; x++) {
      s += plane[o + x]!;
      q += plane[o + x]! * plane[o + x]!;
    }
    for (let x = 0; x < w; x++) {
      if (x + radius < w) {
        const v = plane[o + x + radius]!;
        s += v;
        q += v * v;
      }
      if (x - radius - 1 >= 0) {
        const v = plane[o + x - radius - 1]!;
        s -= v;
        q -= v * v;
      }
      rowSum[o + x] = s;
      rowSquares[o + x] = q;
    }
  }
  // The window's width at each column, once (it was two Math calls per sample).
  const columns = new Float64Array(w);
  for (let x = 0; x < w; x++) columns[x] = Math.min(w, x + radius + 1) - Math.max(0, x - radius);
  const out = new Float32Array(w * h);
  const sum = new Float64Array(w);
  const squares = new Float64Array(w);
  for (let y = 0; y < Math.min(radius, h); y++) {
    for (let x = 0; x < w; x++) {
      sum[x]! += rowSum[y * w + x]!;
      squares[x]! += rowSquares[y * w + x]!;
    }
  }
  // The row entering and the row leaving the window are added and taken off in the pass that reads the column
  // sums (one pass over the row instead of three; each sum sees the same operations in the same order).
  for (let y = 0; y < h; y++) {
    const entering = y + radius < h ? (y + radius) * w : -1;
    const leaving = y - radius - 1 >= 0 ? (y - radius - 1) * w : -1;
    const rows = Math.min(h, y + radius + 1) - Math.max(0, y - radius);
    const o = y * w;
    for (let x = 0; x < w; x++) {
      let s = sum[x]!;
      let q = squares[x]!;
      if (entering >= 0) {
        s += rowSum[entering + x]!;
        q += rowSquares[entering + x]!;
      }
      if (leaving >= 0) {
        s -= rowSum[leaving + x]!;
        q -= rowSquares[leaving + x]!;
      }
      sum[x] = s;
      squares[x] = q;
      const area = rows * columns[x]!;
      const mean = s / area;
      const variance = q / area - mean * mean;
      out[o + x] = Math.sqrt(variance > 0 ? variance : 0);
    }
  }
  return out;
}

/**
 * Pixels sampled for the gain's calibration: every seventh row, every ninth column (odd strides, so they do not
 * keep meeting the same phase of the tile), about 16,000 per megapixel; at most CALIBRATION_ROUNDS measurements.
 */
const SAMPLE_ROWS = 7;
const SAMPLE_COLUMNS = 9;
const CALIBRATION_ROUNDS = 5;

/**
 * The gain at which the marked picture has `psnrDb` over its colour samples, as the pixels will hold it: rounded
 * and clamped to 0..255. Starts from the gain that makes the enlarged change `strength` levels RMS, then measures
 * on a 63rd of the pixels and corrects. The clamp cuts the chips that push a channel at 0 or 255 further, and
 * that energy neither marks nor costs PSNR: here it goes to the rest of the picture instead. Measured
 * (bench/watermark-quick.ts): with the RMS alone the four photos sat at 42.5–43.1 dB (astronaut, 13 % of its
 * samples at 0 or 255, at the top); calibrated, each sits at the target. Bounded to 0.5–2× the starting gain.
 */
function calibratedGain(
  image: RawImage,
  delta: Float32Array,
  strength: number,
  psnrDb: number,
  resampler: LumaResampler,
): number {
  const { width, height, channels, pixels } = image;
  const { gridWidth: gw, gridHeight: gh } = resampler;
  const { x: kx, y: ky } = resampler.enlargement;
  const start = strength / Math.max(1e-9, enlargedRms(delta, gw, gh, width, height, kx, ky));
  const colours = channels === 1 ? 1 : 3;
  // The sampled colour samples and the enlarged unit-gain change at each (what addLumaDelta interpolates there).
  const rows = Math.ceil(height / SAMPLE_ROWS);
  const columns = Math.ceil(width / SAMPLE_COLUMNS);
  const values = new Float32Array(rows * columns * colours);
  const changes = new Float32Array(rows * columns);
  let n = 0;
  for (let y = 0; y < height; y += SAMPLE_ROWS) {
    for (let x = 0; x < width; x += SAMPLE_COLUMNS, n++) {
      let d = 0;
      for (let p = ky.start[y]!; p < ky.start[y + 1]!; p++)
        for (let q = kx.start[x]!; q < kx.start[x + 1]!; q++)
          d += ky.weight[p]! * kx.weight[q]! * delta[ky.index[p]! * gw + kx.index[q]!]!;
      changes[n] = d;
      const at = (y * width + x) * channels;
      for (let c = 0; c < colours; c++) values[n * colours + c] = pixels[at + c]!;
    }
  }
  const targetMse = (255 * 255) / 10 ** (psnrDb / 10);
  const mseAt = (gain: number): number => {
    let sum = 0;
    for (let i = 0; i < n; i++) {
      const change = gain * changes[i]!;
      for (let c = 0; c < colours; c++) {
        const value = values[i * colours + c]!;
        const v = Math.min(255, Math.max(0, Math.round(value + change))) - value;
        sum += v * v;
      }
    }
    return sum / (n * colours);
  };
  // The error grows with the gain, but in steps (rounding turns a flat region's ±0.4 into nothing and its ±0.6 into
  // ±1), so a proportional correction can overshoot: the gain is bracketed, and the largest gain measured at or above
  // the target PSNR is the answer.
  let lo = 0.5 * start;
  let hi = 2 * start;
  let answer = lo;
  let gain = start;
  for (let round = 0; round < CALIBRATION_ROUNDS; round++) {
    const mse = mseAt(gain);
    if (mse <= targetMse) [lo, answer] = [gain, gain];
    else hi = gain;
    if (mse > 0.98 * targetMse && mse <= targetMse) break;
    const guess = mse > 0 ? gain * Math.sqrt(targetMse / mse) : hi;
    gain = guess > lo && guess < hi ? guess : (lo + hi) / 2;
  }
  return answer;
}

/**
 * The RMS change the enlarged `delta` makes to the image, exactly, without enlarging it: the enlargement is
 * Ky · D · Kxᵀ (addLumaDelta's bilinear kernels), so its sum of squares is Σ Gy[i, i'] · Gx[j, j'] · D[i, j] · D[i', j']
 * with the Gram matrices G = Kᵀ · K, which are banded (bilinear taps are neighbours). Grid-sized work at any image size.
 */
function enlargedRms(
  delta: Float32Array,
  gw: number,
  gh: number,
  width: number,
  height: number,
  kx: Kernel1D,
  ky: Kernel1D,
): number {
  const gx = gram(kx);
  const gy = gram(ky);
  // T = D · Gx, row by row.
  const t = new Float64Array(gw * gh);
  const bx = gx.band;
  for (let i = 0; i < gh; i++) {
    const o = i * gw;
    for (let j = 0; j < gw; j++) {
      let sum = gx.g[j * (bx + 1)]! * delta[o + j]!;
      for (let k = 1; k <= bx; k++) {
        if (j + k < gw) sum += gx.g[j * (bx + 1) + k]! * delta[o + j + k]!;
        if (j - k >= 0) sum += gx.g[(j - k) * (bx + 1) + k]! * delta[o + j - k]!;
      }
      t[o + j] = sum;
    }
  }
  // Σ_i Σ_i' Gy[i, i'] · ⟨D[i'], T[i]⟩.
  const by = gy.band;
  let total = 0;
  for (let i = 0; i < gh; i++) {
    for (let k = -by; k <= by; k++) {
      const i2 = i + k;
      if (i2 < 0 || i2 >= gh) continue;
      const weight = k >= 0 ? gy.g[i * (by + 1) + k]! : gy.g[i2 * (by + 1) - k]!;
      if (weight === 0) continue;
      let dot = 0;
      const o = i * gw;
      const o2 = i2 * gw;
      for (let j = 0; j < gw; j++) dot += delta[o2 + j]! * t[o + j]!;
      total += weight * dot;
    }
  }
  return Math.sqrt(Math.max(0, total) / (width * height));
}

/** Kᵀ · K of a kernel, banded: g[j · (band + 1) + k] = Σ_i K[i, j] · K[i, j + k] for 0 ≤ k ≤ band. */
function gram(kernel: Kernel1D): { g: Float64Array; band: number } {
  const { inSize, outSize, start, index, weight } = kernel;
  let band = 0;
  for (let i = 0; i < outSize; i++)
    if (start[i + 1]! > start[i]!) band = Math.max(band, index[start[i + 1]! - 1]! - index[start[i]!]!);
  const g = new Float64Array(inSize * (band + 1));
  for (let i = 0; i < outSize; i++) {
    for (let p = start[i]!; p < start[i + 1]!; p++) {
      for (let q = start[i]!; q < start[i + 1]!; q++) {
        const k = index[q]! - index[p]!;
        if (k >= 0) g[index[p]! * (band + 1) + k]! += weight[p]! * weight[q]!;
      }
    }
  }
  return { g, band };
}

/**
 * The floor under the local magnitude the whitening divides by, as a share of the plane's mean magnitude: it keeps
 * flat regions (where the residual is mostly rounding and re-encoding noise) from being blown up. Measured
 * (services/watermark/bench/watermark-quick.ts, the four photos at 1 MP × 3 keys, every attack of bench/image/attacks.ts):
 * 0.1 against the former 0.25 lowers the mean raw code-bit errors after every attack (JPEG q30 4.8 → 4.5 %, WebP q60
 * 6.9 → 6.1 %, border 8.5 → 6.2 %, scale 0.25× 4.2 → 3.2 %, social 10.3 → 10.1 %); 0.05 and 0.15 did worse on the
 * social chain.
 */
const WHITENING_FLOOR = 0.1;

/** Plane minus its 3×3 mean (edges replicated), clipped to ±3 mean absolute values: the mark's band, host damped. */
function whiten(plane: Float32Array, w: number, h: number): Float64Array {
  const out = new Float64Array(w * h);
  for (let i = 0; i < out.length; i++) out[i] = plane[i]!;
  const mean = boxMeanReplicated(out, w, h);
  let absSum = 0;
  for (let i = 0; i < out.length; i++) {
    const r = out[i]! - mean[i]!;
    out[i] = r;
    absSum += Math.abs(r);
  }
  // Each sample over the local mean magnitude of the residual (7×7): the masked mark grows with local
  // contrast as the host's own residual does, so this equalises the evidence of busy and quiet regions
  // instead of letting edges and texture drown the rest; then clipped against single outliers.
  const magnitude = new Float64Array(out.length);
  for (let i = 0; i < out.length; i++) magnitude[i] = Math.abs(out[i]!);
  const local = boxMean(magnitude, w, h, 3, new Float64Array(w * h));
  const floor = (WHITENING_FLOOR * absSum) / out.length + 0.05;
  for (let i = 0; i < out.length; i++) out[i] = Math.max(-3, Math.min(3, out[i]! / (local[i]! + floor)));
  return out;
}

type Vector = readonly [number, number];

/**
 * Candidate lattices of the tiling (after the nominal one): the spectral comb's best rotation and scale
 * (combLattices), then pairs of autocorrelation peaks: the strongest peak at a plausible period, and the strongest
 * roughly perpendicular to it (any angle, aspect changes). Autocorrelation through the FFT of
 * the whitened plane with magnitudes flattened (|F| instead of |F|²), which sharpens the peaks.
 */
function latticeCandidates(
  r: Float64Array,
  w: number,
  h: number,
  nominal: readonly [Vector, Vector],
): Array<[Vector, Vector]> {
  const { re, im, nx, ny } = flattenedSpectrum(r, w, h);
  // The spectral template first (rotation and scale by a comb over all harmonics), then the autocorrelation's pairs.
  const templates = combLattices(re, nx, ny, nominal);
  fft2d(re, im, nx, ny, true);
  const at: Autocorrelation = (dx, dy) => re[(((dy % ny) + ny) % ny) * nx + (((dx % nx) + nx) % nx)]!;
  const reach = Math.min(nx, ny) / 2;
  return [...templates, ...axisPairs(autocorrelationPeaks(at, reach), at, reach)];
}

/** The autocorrelation at lag (dx, dy), cyclic. */
type Autocorrelation = (dx: number, dy: number) => number;

/**
 * The spectrum of the plane's centre, its power over its local mean (9×9 frequencies) less 1, in `re` (`im`
 * zeroed): the host's smooth spectral envelope divides out and what stands above it is the tile's lattice of
 * spectral lines.
 */
function flattenedSpectrum(
  r: Float64Array,
  w: number,
  h: number,
): { re: Float64Array; im: Float64Array; nx: number; ny: number } {
  // A window of at most AUTOCORRELATION_SIDE² around the centre (a crop, not a resampling: the period must
  // stay in samples); short sides are zero-padded by at least the largest lag so they do not wrap.
  const nx = Math.min(AUTOCORRELATION_SIDE, nextPowerOfTwo(w + MAX_PERIOD + 2));
  const ny = Math.min(AUTOCORRELATION_SIDE, nextPowerOfTwo(h + MAX_PERIOD + 2));
  const cw = Math.min(w, nx - MAX_PERIOD - 2);
  const ch = Math.min(h, ny - MAX_PERIOD - 2);
  const x0 = (w - cw) >> 1;
  const y0 = (h - ch) >> 1;
  const re = new Float64Array(nx * ny);
  const im = new Float64Array(nx * ny);
  let mean = 0;
  for (let y = 0; y < ch; y++) for (let x = 0; x < cw; x++) mean += r[(y + y0) * w + x + x0]!;
  mean /= cw * ch;
  for (let y = 0; y < ch; y++) for (let x = 0; x < cw; x++) re[y * nx + x] = r[(y + y0) * w + x + x0]! - mean;
  fft2d(re, im, nx, ny);
  const power = new Float64Array(nx * ny);
  for (let i = 0; i < power.length; i++) power[i] = re[i]! * re[i]! + im[i]! * im[i]!;
  const envelope = cyclicBoxMean(power, nx, ny, 4);
  for (let i = 0; i < re.length; i++) {
    re[i] = power[i]! / (envelope[i]! + 1e-9) - 1;
    im[i] = 0;
  }
  return { re, im, nx, ny };
}

/** Local maxima of the half plane (the autocorrelation is symmetric) at plausible periods, strongest first. */
function autocorrelationPeaks(at: Autocorrelation, reach: number): Array<{ v: Vector; value: number }> {
  const peaks: Array<{ v: Vector; value: number }> = [];
  for (let dy = 0; dy <= MAX_PERIOD; dy++) {
    for (let dx = -MAX_PERIOD; dx <= MAX_PERIOD; dx++) {
      if (dy === 0 && dx <= 0) continue;
      const rho = Math.hypot(dx, dy);
      if (rho < MIN_PERIOD || rho > MAX_PERIOD) continue;
      const value = at(dx, dy);
      let isMax = true;
      for (let ey = -1; ey <= 1 && isMax; ey++)
        for (let ex = -1; ex <= 1 && isMax; ex++) if ((ex || ey) && at(dx + ex, dy + ey) > value) isMax = false;
      if (!isMax) continue;
      peaks.push(harmonics(at, dx, dy, reach));
    }
  }
  peaks.sort((p, q) => q.value - p.value);
  return peaks;
}

/**
 * The PAIRS best pairs of peaks that can span a square tile seen through a rotation, crop, aspect change:
 * near-perpendicular, similar lengths. The strongest few also get their best partner among all peaks: after a
 * re-encode of a small picture the second axis can rank below the picture's own structure.
 */
function axisPairs(
  peaks: ReadonlyArray<{ v: Vector; value: number }>,
  at: Autocorrelation,
  reach: number,
): Array<[Vector, Vector]> {
  const top = peaks.slice(0, PEAKS);
  const pairs: Array<{ pair: [Vector, Vector]; value: number }> = [];
  const seen = new Set<string>();
  for (let i = 0; i < top.length; i++) {
    for (let j = 0; j < (i < STRONGEST ? peaks.length : top.length); j++) {
      if (j === i) continue;
      const a = top[i]!.v;
      const b = peaks[j]!.v;
      const la = Math.hypot(a[0], a[1]);
      const lb = Math.hypot(b[0], b[1]);
      const cos = Math.abs(a[0] * b[0] + a[1] * b[1]) / (la * lb);
      if (cos > 0.26 || la / lb > 1.35 || lb / la > 1.35) continue;
      const id = i < j ? `${i}/${j}` : `${j}/${i}`;
      if (seen.has(id)) continue;
      seen.add(id);
      pairs.push({ pair: [a, b], value: top[i]!.value + peaks[j]!.value });
    }
  }
  // A square tile's second axis is the first turned by 90° (up to the aspect change): measured there too, in
  // case its peak is not a local maximum of its own next to the picture's structure.
  for (let i = 0; i < Math.min(STRONGEST, top.length); i++) {
    const a = top[i]!.v;
    const turned = harmonics(at, Math.round(-a[1]), Math.round(a[0]), reach);
    if (turned.v[1] < 0) turned.v = [-turned.v[0], -turned.v[1]];
    pairs.push({ pair: [a, turned.v], value: top[i]!.value + turned.value });
  }
  pairs.sort((p, q) => q.value - p.value);
  return pairs.slice(0, PAIRS).map((p) => p.pair);
}

/**
 * The lattices whose spectral lines carry the most flattened power, searched over rotation (±COMB_ANGLE) and
 * period (COMB_RANGE × nominal): a Fourier-domain template of the tiling. The tile's lines are at
 * R(θ)·(k/px, l/py) cycles per sample for a lattice R(θ)·diag(px, py). A comb over every harmonic at once is far
 * more sensitive than any single autocorrelation peak, which a re-encode's 8×8 blocking or the picture's own
 * structure can outrank. Coarse over a grid with the low harmonics, then hill-climbing with all of them from each of
 * the COMB_CANDIDATES strongest coarse peaks.
 */
function combLattices(
  flat: Float64Array,
  nx: number,
  ny: number,
  nominal: readonly [Vector, Vector],
): Array<[Vector, Vector]> {
  const [p0x, p0y] = [nominal[0][0], nominal[1][1]];
  const scales: number[] = [];
  for (let s = COMB_RANGE[0]; s <= COMB_RANGE[1]; s *= 1.003) scales.push(s);
  const angles: number[] = [];
  for (let theta = -COMB_ANGLE; theta <= COMB_ANGLE + 1e-9; theta += COMB_ANGLE_STEP) angles.push(theta);
  const coarse = new Float64Array(angles.length * scales.length);
  for (let t = 0; t < angles.length; t++)
    for (let k = 0; k < scales.length; k++)
      coarse[t * scales.length + k] = combStrength(
        flat,
        nx,
        ny,
        p0x * scales[k]!,
        p0y * scales[k]!,
        angles[t]!,
        COMB_COARSE_HARMONICS,
      );
  // The strongest local maxima of the coarse search, each climbed on its own: the best one can be a lattice of the
  // picture's own structure or of JPEG's blocking (six 8×8 blocks after a halving measure 31 samples against the
  // tile's 41, and collect the blocking's lines on every sixth harmonic), so the next ones are offered too and the
  // keyed reference decides.
  const peaks: Array<{ theta: number; px: number; py: number; value: number }> = [];
  for (let t = 0; t < angles.length; t++) {
    for (let k = 0; k < scales.length; k++) {
      const value = coarse[t * scales.length + k]!;
      let isMax = true;
      for (let et = -1; et <= 1 && isMax; et++)
        for (let ek = -1; ek <= 1 && isMax; ek++) {
          const [u, v] = [t + et, k + ek];
          if ((et || ek) && u >= 0 && u < angles.length && v >= 0 && v < scales.length)
            if (coarse[u * scales.length + v]! > value) isMax = false;
        }
      if (isMax) peaks.push({ theta: angles[t]!, px: p0x * scales[k]!, py: p0y * scales[k]!, value });
    }
  }
  peaks.sort((p, q) => q.value - p.value);
  return peaks.slice(0, COMB_CANDIDATES).map((peak) => climbComb(flat, nx, ny, peak));
}

/** Hill-climbing of the comb from a coarse peak, on angle and each period, with all harmonics. */
function climbComb(
  flat: Float64Array,
  nx: number,
  ny: number,
  start: { theta: number; px: number; py: number },
): [Vector, Vector] {
  let best = { ...start, value: combStrength(flat, nx, ny, start.px, start.py, start.theta, COMB_HARMONICS) };
  for (const step of [0.01, 0.003, 0.001]) {
    const angleStep = step * 0.5;
    for (let round = 0, moved = true; moved && round < 8; round++) {
      moved = false;
      for (const [dx, dy, dt] of COMB_MOVES) {
        const px = best.px * (1 + dx * step);
        const py = best.py * (1 + dy * step);
        const theta = best.theta + dt * angleStep;
        const value = combStrength(flat, nx, ny, px, py, theta, COMB_HARMONICS);
        if (value > best.value) [best, moved] = [{ theta, px, py, value }, true];
      }
    }
  }
  const [c, s] = [Math.cos(best.theta), Math.sin(best.theta)];
  return [
    [best.px * c, best.px * s],
    [-best.py * s, best.py * c],
  ];
}

/** Coarse peaks of the comb climbed and offered as lattices, strongest first. */
const COMB_CANDIDATES = 3;

const COMB_MOVES: ReadonlyArray<readonly [number, number, number]> = [
  [1, 0, 0],
  [-1, 0, 0],
  [0, 1, 0],
  [0, -1, 0],
  [1, 1, 0],
  [-1, -1, 0],
  [0, 0, 1],
  [0, 0, -1],
];
/** Harmonics of the tile's fundamental the comb sums (the chips' spectrum reaches beyond; JPEG keeps the low ones). */
const COMB_HARMONICS = 20;
const COMB_COARSE_HARMONICS = 12;
/** Periods the comb tries, relative to the nominal one: borders shrink it, crops and zooms stretch it. */
const COMB_RANGE: readonly [number, number] = [0.75, 1.35];
/** Rotations the comb tries (radians) and its coarse step: ±6°, 1°. */
const COMB_ANGLE = (6 * Math.PI) / 180;
const COMB_ANGLE_STEP = Math.PI / 180;

/** Flattened power summed (bilinearly) over the spectral lines of the lattice R(θ)·diag(px, py), half plane. */
function combStrength(
  flat: Float64Array,
  nx: number,
  ny: number,
  px: number,
  py: number,
  theta: number,
  harmonics: number,
): number {
  const c = Math.cos(theta);
  const s = Math.sin(theta);
  let value = 0;
  for (let l = 0; l <= harmonics; l++) {
    for (let k = -harmonics; k <= harmonics; k++) {
      if (l === 0 && k <= 0) continue;
      const u = k / px;
      const v = l / py;
      const fx = c * u - s * v;
      const fy = s * u + c * v;
      if (fx > 0.5 || fx < -0.5 || fy > 0.5 || fy < -0.5) continue;
      const bx = fx < 0 ? (fx + 1) * nx : fx * nx;
      const by = fy < 0 ? (fy + 1) * ny : fy * ny;
      const ix = Math.floor(bx);
      const iy = Math.floor(by);
      const tx = bx - ix;
      const ty = by - iy;
      const r0 = (iy % ny) * nx;
      const r1 = ((iy + 1) % ny) * nx;
      const x0 = ix % nx;
      const x1 = (ix + 1) % nx;
      value +=
        (1 - ty) * ((1 - tx) * flat[r0 + x0]! + tx * flat[r0 + x1]!) +
        ty * ((1 - tx) * flat[r1 + x0]! + tx * flat[r1 + x1]!);
    }
  }
  return value;
}

/**
 * A lattice peak seen with its multiples: a tiling repeats at 2p and 3p too, the picture's own structure rarely
 * does. The value is the sum of the peaks at p, 2p, 3p (each the maximum of its 3×3 neighbourhood), and the
 * vector is the least-squares fit of their sub-sample positions, three times as precise as p alone, which
 * matters because the fold accumulates the error over every period of the picture.
 */
function harmonics(
  at: (dx: number, dy: number) => number,
  dx: number,
  dy: number,
  maxLag: number,
): { v: Vector; value: number } {
  // Refines to the local maximum first: (dx, dy) may be a prediction rather than a peak.
  for (let moved = true, steps = 0; moved && steps < 3; steps++) {
    moved = false;
    let [bx, by] = [dx, dy];
    for (let ey = -1; ey <= 1; ey++)
      for (let ex = -1; ex <= 1; ex++) if (at(dx + ex, dy + ey) > at(bx, by)) [bx, by] = [dx + ex, dy + ey];
    if (bx !== dx || by !== dy) [dx, dy, moved] = [bx, by, true];
  }
  let value = 0;
  let sx = 0;
  let sy = 0;
  let weight = 0;
  for (let k = 1; k <= HARMONICS; k++) {
    // The k-th multiple is looked for around k times the estimate so far (k·(dx, dy) drifts by k·error).
    let px = k === 1 ? dx : Math.round((k * sx) / weight);
    let py = k === 1 ? dy : Math.round((k * sy) / weight);
    if (Math.hypot(px, py) > maxLag - 2) break;
    if (k > 1) {
      const cx = px;
      const cy = py;
      for (let ey = -1; ey <= 1; ey++)
        for (let ex = -1; ex <= 1; ex++) if (at(cx + ex, cy + ey) > at(px, py)) [px, py] = [cx + ex, cy + ey];
    }
    const centre = at(px, py);
    value += centre;
    const fx = px + parabolic(at(px - 1, py), centre, at(px + 1, py));
    const fy = py + parabolic(at(px, py - 1), centre, at(px, py + 1));
    // Least squares of (fx, fy) ≈ k · v: v = Σ k·f / Σ k².
    sx += k * fx;
    sy += k * fy;
    weight += k * k;
  }
  return { v: [sx / weight, sy / weight], value };
}

/** Mean over the 3×3 neighbourhood with the edges replicated (separable: rows of three, then columns of three). */
function boxMeanReplicated(plane: Float64Array, w: number, h: number): Float64Array {
  const rows = new Float64Array(w * h);
  for (let y = 0; y < h; y++) {
    const o = y * w;
    for (let x = 0; x < w; x++)
      rows[o + x] = plane[o + Math.max(0, x - 1)]! + plane[o + x]! + plane[o + Math.min(w - 1, x + 1)]!;
  }
  const out = new Float64Array(w * h);
  for (let y = 0; y < h; y++) {
    const above = Math.max(0, y - 1) * w;
    const below = Math.min(h - 1, y + 1) * w;
    const o = y * w;
    for (let x = 0; x < w; x++) out[o + x] = (rows[above + x]! + rows[o + x]! + rows[below + x]!) / 9;
  }
  return out;
}

/** Mean over the (2·radius + 1)² neighbourhood on a torus, separable running sums. */
function cyclicBoxMean(plane: Float64Array, w: number, h: number, radius: number): Float64Array {
  const span = 2 * radius + 1;
  const rows = new Float64Array(w * h);
  for (let y = 0; y < h; y++) {
    const o = y * w;
    let s = 0;
    for (let k = -radius; k <= radius; k++) s += plane[o + ((k + w) % w)]!;
    for (let x = 0; x < w; x++) {
      rows[o + x] = s;
      s += plane[o + ((x + radius + 1) % w)]! - plane[o + ((x - radius + w) % w)]!;
    }
  }
  const out = new Float64Array(w * h);
  for (let x = 0; x < w; x++) {
    let s = 0;
    for (let k = -radius; k <= radius; k++) s += rows[((k + h) % h) * w + x]!;
    for (let y = 0; y < h; y++) {
      out[y * w + x] = s / (span * span);
      s += rows[((y + radius + 1) % h) * w + x]! - rows[((y - radius + h) % h) * w + x]!;
    }
  }
  return out;
}

/** Offset of the vertex of the parabola through three equally spaced samples, in -0.5..0.5. */
function parabolic(left: number, centre: number, right: number): number {
  const curvature = left - 2 * centre + right;
  if (curvature >= 0) return 0;
  return Math.max(-0.5, Math.min(0.5, (0.5 * (left - right)) / curvature));
}

/**
 * The key-independent part of detection: grid, whitening, lattice, fold onto one tile (BINS² half-chip bins)
 * and its spectrum. Null when the image is too small or shows no lattice at all. `gridArea` is the embedding
 * grid's area the mark was made on (GRID_AREA for every image mark; video frames may use a coarser one).
 */
export function analyseSync(
  image: RawImage,
  minDetectSize: number = CAIRN_SYNC_V2.minDetectSize,
  gridArea: number = GRID_AREA,
): SyncAnalysis | null {
  assertWellFormed(image);
  if (Math.min(image.width, image.height) < minDetectSize) return null;
  const [gw, gh] = gridSize(image.width, image.height, DETECT_OVERSAMPLING, gridArea);
  const luma = lumaGrid(image, gw, gh);
  const r = whiten(luma, gw, gh);
  // The tiling as embedded into an image of this size, in this grid's samples (exact ratio of the two
  // rounded grids, which a fold over ten periods would notice).
  const [ew, eh] = gridSize(image.width, image.height, 1, gridArea);
  const nominal: [Vector, Vector] = [
    [(TILE * CHIP * gw) / ew, 0],
    [0, (TILE * CHIP * gh) / eh],
  ];
  return new SyncAnalysis(luma, r, gw, gh, nominal, image);
}

function withSpectrum(folded: Float64Array): { folded: Float64Array; re: Float64Array; im: Float64Array } {
  const re = Float64Array.from(folded);
  const im = new Float64Array(folded.length);
  fft2d(re, im, BINS, BINS);
  return { folded, re, im };
}

/** The picture folded onto one tile of the lattice (a, b): BINS² bins, mean removed. */
function fold(
  r: Float64Array,
  gw: number,
  gh: number,
  a: Vector,
  b: Vector,
  origin: Vector = [0, 0],
): Float64Array | null {
  const det = a[0] * b[1] - b[0] * a[1];
  if (Math.abs(det) < 1) return null;
  // Tile coordinates (in bins) of grid sample (x, y): the inverse of [a b], scaled to BINS per period, plus origin.
  const ux = (b[1] / det) * BINS;
  const uy = (-b[0] / det) * BINS;
  const vx = (-a[1] / det) * BINS;
  const vy = (a[0] / det) * BINS;
  const sum = new Float64Array(BINS * BINS);
  const count = new Float64Array(BINS * BINS);
  const wrap = BINS * 1024;
  for (let y = 0; y < gh; y++) {
    // Offsetting by a multiple of BINS keeps the coordinates positive, so truncation is the floor and &
    // the modulo.
    let u = uy * y + origin[0] + wrap;
    let v = vy * y + origin[1] + wrap;
    const row = y * gw;
    for (let x = 0; x < gw; x++, u += ux, v += vx) {
      const bin = ((v | 0) & (BINS - 1)) * BINS + ((u | 0) & (BINS - 1));
      sum[bin]! += r[row + x]!;
      count[bin]!++;
    }
  }
  const folded = new Float64Array(BINS * BINS);
  let mean = 0;
  for (let i = 0; i < folded.length; i++) {
    folded[i] = count[i]! > 0 ? sum[i]! / count[i]! : 0;
    mean += folded[i]!;
  }
  mean /= folded.length;
  for (let i = 0; i < folded.length; i++) folded[i]! -= mean;
  return folded;
}

/**
 * The fine grid folded onto the lattice (a, b) of the detection grid, in the detection grid's tile coordinates. Fine
 * sample x_f is detection sample x = (x_f + ½) / kx − ½ (both grids centre their samples as the resampling does), so
 * the lattice scales by (kx, ky) and the fold's origin moves by the tile coordinates of (½ / kx − ½, ½ / ky − ½).
 */
function fineFold(fine: FineGrid, a: Vector, b: Vector): Float64Array | null {
  const det = a[0] * b[1] - b[0] * a[1];
  if (Math.abs(det) < 1) return null;
  const cx = 0.5 / fine.kx - 0.5;
  const cy = 0.5 / fine.ky - 0.5;
  const origin: Vector = [((b[1] * cx - b[0] * cy) / det) * BINS, ((-a[1] * cx + a[0] * cy) / det) * BINS];
  const scaled = (v: Vector): Vector => [v[0] * fine.kx, v[1] * fine.ky];
  return fold(fine.residual, fine.width, fine.height, scaled(a), scaled(b), origin);
}

/**
 * Where detection-grid sample (x, y) lies on the embedding grid, in embedding-grid sample units and modulo the
 * tile period: the inverse of the lattice (a, b) as the fold applies it, less the reference's offset, under the
 * orientation found. A chip c occupies [2c, 2c + 2) in bins, i.e. embedding sample c centred at c.
 */
function geometryOf(
  a: Vector,
  b: Vector,
  d: { swap: boolean; fx: boolean; fy: boolean },
  sx: number,
  sy: number,
): SyncGeometry {
  const det = a[0] * b[1] - b[0] * a[1];
  // Bins of (x, y): u = ux·x + uy·y − sx, v = vx·x + vy·y − sy (the reference's coordinates).
  const u: [number, number, number] = [(b[1] / det) * BINS, (-b[0] / det) * BINS, -sx];
  const v: [number, number, number] = [(-a[1] / det) * BINS, (a[0] / det) * BINS, -sy];
  let p = d.swap ? v : u;
  let q = d.swap ? u : v;
  // A flip maps bin b to BINS − 1 − b, continuous c to BINS − c.
  if (d.fx) p = [-p[0], -p[1], BINS - p[2]];
  if (d.fy) q = [-q[0], -q[1], BINS - q[2]];
  const toSamples = BINS / (TILE * CHIP);
  return {
    m: [p[0] / toSamples, p[1] / toSamples, q[0] / toSamples, q[1] / toSamples],
    t: [p[2] / toSamples - 0.5, q[2] / toSamples - 0.5],
    period: TILE * CHIP,
  };
}

export function createSyncImageWatermark(key: Uint8Array): SyncTileWatermark {
  return new SyncTileWatermark(key);
}
