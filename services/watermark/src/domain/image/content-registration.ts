/**
 * Content registration for cairn-sync-v2: is the picture carrying a mark the picture the mark was put on?
 *
 * A mark proves only that someone with the key (or a copy of its signal) put it there. A spread-spectrum tile
 * can be estimated from a marked image and added to another one (a copy attack), and the copy then reads as
 * the victim's asset. The asset's perceptual hash cannot settle it: a crop or a rotation moves PDQ 36–98 bits.
 * But the detector knows the geometry: the lattice, orientation and offset tell where each sample of the
 * received picture lies on the embedding grid, up to a whole number of tile periods. So the embedder keeps a
 * coarse luma map of what it marked (CELL² embedding samples per byte, about 64² bytes), and detection maps the
 * received picture onto it at each whole-period translation, keeping the best Pearson correlation. The
 * received picture must lie mostly inside the asset's frame and follow its luma closely there, or (fine texture,
 * which the geometry's small errors decorrelate) show a distinct peak there, or (under a caption bar or a logo)
 * follow it closely over four fifths of the frame; a plain asset is matched by a plain picture. Measured (services/watermark/docs/image.md, "Content check"; docs/content-classes.md): the signed images
 * after every attack of the table against the same images carrying a transplanted mark.
 */
import { boxMean } from './box-mean.js';

export interface SyncGeometry {
  /** Embedding-grid coordinates of detection-grid sample (x, y), modulo `period`: (m0·x + m1·y + t0, m2·x + m3·y + t1). */
  readonly m: readonly [number, number, number, number];
  readonly t: readonly [number, number];
  readonly period: number;
}

/** Embedding-grid samples per side of a descriptor cell. */
const CELL = 4;
const HEADER_BYTES = 4;
/** A received picture must lie at least this much inside the asset's frame (a 5 % border leaves about 82 %). */
export const MIN_INSIDE = 0.5;
/** Pearson correlation of the luma maps above which the content is the asset's (see the README's measurements). */
export const MIN_CORRELATION = 0.95;
/** Fewer points than this say nothing. */
const MIN_POINTS = 48;

/** The coarse luma map of an embedding grid: u16 cells across, u16 cells down, then one byte per cell (mean luma). */
export function describeContent(luma: Float32Array, gw: number, gh: number): Uint8Array {
  const cw = Math.floor(gw / CELL);
  const ch = Math.floor(gh / CELL);
  const out = new Uint8Array(HEADER_BYTES + cw * ch);
  new DataView(out.buffer).setUint16(0, cw);
  new DataView(out.buffer).setUint16(2, ch);
  for (let cy = 0; cy < ch; cy++) {
    for (let cx = 0; cx < cw; cx++) {
      let sum = 0;
      for (let y = cy * CELL; y < (cy + 1) * CELL; y++)
        for (let x = cx * CELL; x < (cx + 1) * CELL; x++) sum += luma[y * gw + x]!;
      out[HEADER_BYTES + cy * cw + cx] = Math.round(Math.min(255, Math.max(0, sum / (CELL * CELL))));
    }
  }
  return out;
}

/** Points of a received picture placed on the embedding grid (modulo the period) with their coarse luma. */
export interface RegisteredPoints {
  readonly xs: Float32Array;
  readonly ys: Float32Array;
  readonly values: Float32Array;
  readonly period: number;
}

/**
 * Samples the detection grid's luma every descriptor cell (as mapped by the geometry), each averaged over a
 * box of about that size, and places them on the embedding grid.
 */
export function registeredPoints(luma: Float32Array, w: number, h: number, geometry: SyncGeometry): RegisteredPoints {
  const [m0, m1, m2, m3] = geometry.m;
  // Embedding samples per detection sample (the mapping is a similarity up to the aspect change).
  const scale = Math.sqrt(Math.abs(m0 * m3 - m1 * m2));
  const stride = Math.max(1, CELL / scale);
  const radius = Math.max(0, Math.round(stride / 2 - 0.5));
  const smooth = radius === 0 ? luma : boxMean(luma, w, h, radius, new Float32Array(w * h));
  const nx = Math.floor(w / stride);
  const ny = Math.floor(h / stride);
  const xs = new Float32Array(nx * ny);
  const ys = new Float32Array(nx * ny);
  const values = new Float32Array(nx * ny);
  let n = 0;
  for (let j = 0; j < ny; j++) {
    const y = Math.min(h - 1, Math.round((j + 0.5) * stride));
    for (let i = 0; i < nx; i++, n++) {
      const x = Math.min(w - 1, Math.round((i + 0.5) * stride));
      xs[n] = m0 * x + m1 * y + geometry.t[0];
      ys[n] = m2 * x + m3 * y + geometry.t[1];
      values[n] = smooth[y * w + x]!;
    }
  }
  return { xs, ys, values, period: geometry.period };
}

export interface ContentComparison {
  /**
   * The first Pearson correlation over the whole-period translations (most overlap first) to reach
   * MIN_CORRELATION; short of that the best, or the best within an eighth of a period of it (−1..1; 0 when nothing
   * overlapped).
   */
  readonly correlation: number;
  /**
   * The lower quartile of the correlations with the picture moved a quarter to half a tile period off the peak
   * (on a grid of eighth periods): what content merely alike in kind (two gradients, two skies) reaches anywhere,
   * where the asset's own content peaks in its place.
   */
  readonly offCorrelation: number;
  /** Share of the received picture inside the asset's frame at that translation. */
  readonly inside: number;
  readonly consistent: boolean;
}

/**
 * Below MIN_CORRELATION, content with a distinct peak is still the asset's if the peak reaches MIN_PEAK_CORRELATION
 * and stands MIN_PEAK_MARGIN above what the picture reaches off it (the OFF_QUANTILE of the placements an eighth of
 * a period apart, a quarter of a period and more from the peak, within half a period). Fine texture (grain, grass,
 * line art, small text, a photo's foliage) decorrelates under the few tenths of a sample the recovered geometry is
 * off after a crop or a rotation (honest tuning copies measured 0.58–0.95, margins 0.36 and more), but nowhere else does it
 * correlate; unrelated content either correlates little or, when smooth (gradients, skies, a grey photo's sky), about
 * as much off the peak (the nearest transplant on the judging set: 0.64 with a margin of 0.287). Chosen on the
 * `tuning` set of bench/watermark-image-content.ts (docs/content-classes.md, "Content check").
 */
export const MIN_PEAK_CORRELATION = 0.55;
export const MIN_PEAK_MARGIN = 0.3;
/** Placements per tile period of the grid the peak is looked for on. */
const OFF_STEPS = 8;
/** Which of the placements off the peak it is compared with (sorted up): the lowest quarter's top. */
const OFF_QUANTILE = 0.25;
/** A descriptor whose cells vary less than this (levels, standard deviation) is a plain colour: nothing to correlate. */
const FLAT_DESCRIPTOR = 1;
/** A plain asset's copy is plain too: its registered luma varies by less than this (levels) inside the frame. */
const FLAT_RECEIVED = 1.5;
/**
 * A plain asset's copy under an overlay (a caption bar, a logo): the PLAIN_KEEP of its points nearest their median
 * vary by less than FLAT_RECEIVED, within PLAIN_LEVEL levels of the asset's own. Other content is not one level
 * over seven tenths of the frame, least of all the asset's; an overlay over up to three tenths of it is outside them.
 */
const PLAIN_KEEP = 0.7;
const PLAIN_LEVEL = 4;

/** A descriptor's cells: cw × ch coarse luma means of the embedding grid (describeContent). */
interface LumaMap {
  readonly cells: Uint8Array;
  readonly cw: number;
  readonly ch: number;
}

/** The descriptor bilinearly interpolated at cell coordinates (cx, cy), which lie inside its grid. */
function cellAt({ cells, cw, ch }: LumaMap, cx: number, cy: number): number {
  const x0 = Math.min(cw - 2, cx | 0);
  const y0 = Math.min(ch - 2, cy | 0);
  const fx = cx - x0;
  const fy = cy - y0;
  const o = y0 * cw + x0;
  const top = cells[o]! + fx * (cells[o + 1]! - cells[o]!);
  const bottom = cells[o + cw]! + fx * (cells[o + cw + 1]! - cells[o + cw]!);
  return top + fy * (bottom - top);
}

/** Pearson correlation of the points, moved by (dx, dy) embedding samples, with the descriptor; n = points inside. */
function correlationAt(
  points: RegisteredPoints,
  map: LumaMap,
  dx: number,
  dy: number,
): { n: number; correlation: number; deviation: number } {
  const sums = new PearsonSums();
  forEachInside(points, map, dx, dy, (value, cx, cy) => sums.add(value, cellAt(map, cx, cy)));
  const { n } = sums;
  if (n === 0) return { n, correlation: 0, deviation: 0 };
  const { correlation, va } = sums.fit();
  return { n, correlation, deviation: Math.sqrt(Math.max(0, va / n)) };
}

/**
 * The sums over pairs (a, b) that give their Pearson correlation, a's sum of squared deviations (va) and the
 * least-squares fit a ≈ slope·b + intercept.
 */
class PearsonSums {
  n = 0;
  private sa = 0;
  private sb = 0;
  private saa = 0;
  private sbb = 0;
  private sab = 0;

  add(a: number, b: number): void {
    this.n++;
    this.sa += a;
    this.sb += b;
    this.saa += a * a;
    this.sbb += b * b;
    this.sab += a * b;
  }

  fit(): { correlation: number; va: number; slope: number; intercept: number } {
    const { n, sa, sb, saa, sbb, sab } = this;
    const va = saa - (sa * sa) / n;
    const vb = sbb - (sb * sb) / n;
    const cov = sab - (sa * sb) / n;
    const slope = vb > 0 ? cov / vb : 0;
    return {
      correlation: va > 0 && vb > 0 ? cov / Math.sqrt(va * vb) : 0,
      va,
      slope,
      intercept: (sa - slope * sb) / n,
    };
  }
}

/** Mean and standard deviation of the values (levels). */
function meanAndDeviation(values: Iterable<number>): { mean: number; deviation: number } {
  let n = 0;
  let s = 0;
  let q = 0;
  for (const v of values) {
    n++;
    s += v;
    q += v * v;
  }
  const mean = n > 0 ? s / n : 0;
  return { mean, deviation: n > 0 ? Math.sqrt(Math.max(0, q / n - mean * mean)) : 0 };
}

/** Standard deviation of the descriptor's cells (levels). */
function spread(cells: Uint8Array): number {
  return meanAndDeviation(cells).deviation;
}

/**
 * An overlay (a caption bar, a logo, a sticker) replaces part of an honest copy with content of its own, which pulls
 * the correlation of the whole picture far down (a caption bar over a tenth of the height: 0.11–0.90 on the judging
 * hosts it failed) while the rest of it still follows the asset's luma map almost exactly. So where neither rule
 * above names the copy, it is named when, at one of the TRIM_PLACEMENTS placements covering the frame most, the
 * points that follow the map best (TRIM_KEEP of them, those nearest the luma fit, refitted TRIM_ROUNDS times)
 * correlate at MIN_TRIMMED_CORRELATION. Content that is not the asset's does not follow it over four fifths of the
 * frame: chosen on the `tuning` set of bench/watermark-image-content.ts, where transplants reached at most 0.904
 * (judging set: 0.891) and the overlaid honest copies it names 0.973–1.000 (docs/content-classes.md, "Content check").
 */
export const MIN_TRIMMED_CORRELATION = 0.97;
const TRIM_KEEP = 0.8;
const TRIM_ROUNDS = 3;
const TRIM_PLACEMENTS = 4;

/** Pearson correlation of a[i], b[i] over the i where `use` is set, and the fit a ≈ slope·b + intercept. */
function fitted(
  a: Float32Array,
  b: Float32Array,
  use: Uint8Array,
): { correlation: number; slope: number; intercept: number } {
  const sums = new PearsonSums();
  for (let i = 0; i < a.length; i++) if (use[i]) sums.add(a[i]!, b[i]!);
  return sums.fit();
}

/**
 * Visits each point moved by (dx, dy) embedding samples that lies inside the cw × ch descriptor, with its luma and
 * its cell coordinates (cell c covers samples [c·CELL, (c + 1)·CELL), centred at c·CELL + (CELL − 1) / 2).
 */
function forEachInside(
  points: RegisteredPoints,
  { cw, ch }: LumaMap,
  dx: number,
  dy: number,
  visit: (value: number, cx: number, cy: number) => void,
): void {
  const { xs, ys, values } = points;
  const half = (CELL - 1) / 2;
  for (let k = 0; k < values.length; k++) {
    const cx = (xs[k]! + dx - half) / CELL;
    const cy = (ys[k]! + dy - half) / CELL;
    if (cx >= 0 && cy >= 0 && cx <= cw - 1 && cy <= ch - 1) visit(values[k]!, cx, cy);
  }
}

/** The correlation of the points at (dx, dy) that follow the map best: TRIM_KEEP of them, nearest the fit. */
function trimmedCorrelationAt(
  points: RegisteredPoints,
  map: LumaMap,
  dx: number,
  dy: number,
): { n: number; correlation: number } {
  const a = new Float32Array(points.values.length);
  const b = new Float32Array(points.values.length);
  let n = 0;
  forEachInside(points, map, dx, dy, (value, cx, cy) => {
    a[n] = value;
    b[n] = cellAt(map, cx, cy);
    n++;
  });
  if (n < MIN_POINTS) return { n, correlation: 0 };
  const pa = a.subarray(0, n);
  const pb = b.subarray(0, n);
  const use = new Uint8Array(n).fill(1);
  const residuals = new Float32Array(n);
  const sorted = new Float32Array(n);
  let fit = fitted(pa, pb, use);
  for (let round = 0; round < TRIM_ROUNDS; round++) {
    for (let i = 0; i < n; i++) residuals[i] = Math.abs(pa[i]! - (fit.slope * pb[i]! + fit.intercept));
    sorted.set(residuals);
    const cut = sorted.sort()[Math.floor(n * TRIM_KEEP) - 1]!;
    for (let i = 0; i < n; i++) use[i] = residuals[i]! <= cut ? 1 : 0;
    fit = fitted(pa, pb, use);
  }
  return { n, correlation: fit.correlation };
}

/**
 * Whether the trimmed correlation reaches MIN_TRIMMED_CORRELATION at one of the TRIM_PLACEMENTS placements covering
 * the frame most (`placements` is so sorted); the first that does settles it.
 */
function namedUnderOverlay(
  points: RegisteredPoints,
  map: LumaMap,
  placements: ReadonlyArray<{ dx: number; dy: number }>,
  enough: (n: number) => boolean,
): boolean {
  return placements.slice(0, TRIM_PLACEMENTS).some(({ dx, dy }) => {
    const at = trimmedCorrelationAt(points, map, dx, dy);
    return enough(at.n) && at.correlation >= MIN_TRIMMED_CORRELATION;
  });
}

/** Whether the points at (dx, dy) are the plain asset's colour but for an overlay (see PLAIN_KEEP). */
function plainUnderOverlay(points: RegisteredPoints, map: LumaMap, dx: number, dy: number): boolean {
  const inside: number[] = [];
  forEachInside(points, map, dx, dy, (value) => inside.push(value));
  if (inside.length < MIN_POINTS) return false;
  inside.sort((p, q) => p - q);
  const median = inside[inside.length >> 1]!;
  const kept = inside
    .map((v) => ({ v, distance: Math.abs(v - median) }))
    .sort((p, q) => p.distance - q.distance)
    .slice(0, Math.floor(inside.length * PLAIN_KEEP))
    .map(({ v }) => v);
  const { mean, deviation } = meanAndDeviation(kept);
  return deviation < FLAT_RECEIVED && Math.abs(mean - meanAndDeviation(map.cells).mean) < PLAIN_LEVEL;
}

/**
 * The whole-period translations that can put any of the picture inside the asset's frame (ew × eh embedding
 * samples), those whose bounding box overlaps it most first: an honest copy reaches MIN_CORRELATION at (or next to)
 * the placement that covers the frame best, and the first placement that reaches it settles the answer. A plain
 * asset's rule keeps the placement with the most inside in the order found, so its placements are not reordered.
 */
function wholePeriodPlacements(
  points: RegisteredPoints,
  ew: number,
  eh: number,
  flat: boolean,
): Array<{ dx: number; dy: number }> {
  const { xs, ys, period } = points;
  let minX = Infinity;
  let maxX = -Infinity;
  let minY = Infinity;
  let maxY = -Infinity;
  for (let k = 0; k < xs.length; k++) {
    minX = Math.min(minX, xs[k]!);
    maxX = Math.max(maxX, xs[k]!);
    minY = Math.min(minY, ys[k]!);
    maxY = Math.max(maxY, ys[k]!);
  }
  const placements: Array<{ dx: number; dy: number; overlap: number }> = [];
  for (let i = Math.floor(-maxX / period) - 1; i <= Math.ceil((ew - minX) / period) + 1; i++) {
    for (let j = Math.floor(-maxY / period) - 1; j <= Math.ceil((eh - minY) / period) + 1; j++) {
      const dx = i * period;
      const dy = j * period;
      const overlapX = Math.min(maxX + dx, ew) - Math.max(minX + dx, 0);
      const overlapY = Math.min(maxY + dy, eh) - Math.max(minY + dy, 0);
      if (overlapX < 0 || overlapY < 0) continue;
      placements.push({ dx, dy, overlap: overlapX * overlapY });
    }
  }
  if (!flat) placements.sort((a, b) => b.overlap - a.overlap);
  return placements;
}

/**
 * The received picture's luma against the asset's descriptor at every translation by whole tile periods that
 * puts at least MIN_INSIDE of it inside the asset's frame. The content is the asset's when a correlation
 * reaches MIN_CORRELATION, or MIN_PEAK_CORRELATION with a peak MIN_PEAK_MARGIN above the correlation off it, or (a
 * copy under an overlay) when four fifths of it correlate at MIN_TRIMMED_CORRELATION. A plain asset (a descriptor
 * with no variance to correlate) is matched by a copy that is plain as well, or plain at its level but for an
 * overlay (PLAIN_KEEP).
 */
export function compareContent(points: RegisteredPoints, descriptor: Uint8Array): ContentComparison {
  const none: ContentComparison = { correlation: 0, offCorrelation: 0, inside: 0, consistent: false };
  if (descriptor.length < HEADER_BYTES) return none;
  const view = new DataView(descriptor.buffer, descriptor.byteOffset, descriptor.byteLength);
  const cw = view.getUint16(0);
  const ch = view.getUint16(2);
  if (cw < 2 || ch < 2 || descriptor.length !== HEADER_BYTES + cw * ch) return none;
  const cells = descriptor.subarray(HEADER_BYTES);
  const map: LumaMap = { cells, cw, ch };
  const { values, period } = points;
  const total = values.length;
  if (total < MIN_POINTS) return none;
  const ew = cw * CELL;
  const eh = ch * CELL;
  const enough = (n: number) => n >= MIN_POINTS && n >= MIN_INSIDE * total;
  const flat = spread(cells) < FLAT_DESCRIPTOR;
  const placements = wholePeriodPlacements(points, ew, eh, flat);
  let best = none;
  let bestShift: [number, number] = [0, 0];
  for (const { dx, dy } of placements) {
    const at = correlationAt(points, map, dx, dy);
    if (!enough(at.n)) continue;
    if (flat) {
      // Where the most of the picture lies inside, the plainest placement: plain content is plain everywhere.
      const consistent = at.deviation < FLAT_RECEIVED;
      if (at.n / total > best.inside || (consistent && !best.consistent)) {
        best = { correlation: at.correlation, offCorrelation: 0, inside: at.n / total, consistent };
        bestShift = [dx, dy];
      }
      continue;
    }
    if (at.correlation > best.correlation) {
      best = { correlation: at.correlation, offCorrelation: 0, inside: at.n / total, consistent: false };
      bestShift = [dx, dy];
      // The first placement to reach it settles the answer: the search need not go on for a higher one.
      if (best.correlation >= MIN_CORRELATION) break;
    }
  }
  if (flat && best !== none && !best.consistent && plainUnderOverlay(points, map, ...bestShift))
    return { ...best, consistent: true };
  if (flat || best === none) return best;
  if (best.correlation >= MIN_CORRELATION) return { ...best, consistent: true };
  // The recovered translation can be a fraction of a period off its place (an off-centre crop of the screenshot
  // measured 0.46 in place, 0.86 an eighth of a period away), so the correlation is taken on a grid of eighth
  // periods around it: the peak within one step, against what the picture reaches two steps and more from it.
  const step = period / OFF_STEPS;
  const half = OFF_STEPS / 2;
  const grid: Array<{ at: { n: number; correlation: number }; gx: number; gy: number }> = [];
  let peak = { correlation: best.correlation, inside: best.inside, gx: 0, gy: 0 };
  for (let gy = -half; gy <= half; gy++) {
    for (let gx = -half; gx <= half; gx++) {
      const at = correlationAt(points, map, bestShift[0] + gx * step, bestShift[1] + gy * step);
      if (!enough(at.n)) continue;
      grid.push({ at, gx, gy });
      if (Math.abs(gx) <= 1 && Math.abs(gy) <= 1 && at.correlation > peak.correlation)
        peak = { correlation: at.correlation, inside: at.n / total, gx, gy };
    }
  }
  // A low quantile rather than the median: periodic content (text lines every quarter period, a grid of cards)
  // comes back to itself at many of the placements, but falls between its lines at a quarter of them at least,
  // where content merely alike in kind (two gradients, two skies) stays about as high nearly everywhere. Nowhere
  // to move it (a picture barely inside the frame): no peak is shown.
  const offs = grid
    .filter(({ gx, gy }) => Math.max(Math.abs(gx - peak.gx), Math.abs(gy - peak.gy)) >= 2)
    .map(({ at }) => at.correlation)
    .sort((a, b) => a - b);
  const off = offs.length ? offs[Math.floor(offs.length * OFF_QUANTILE)]! : peak.correlation;
  const consistent =
    peak.correlation >= MIN_CORRELATION ||
    (peak.correlation >= MIN_PEAK_CORRELATION && peak.correlation - off >= MIN_PEAK_MARGIN) ||
    namedUnderOverlay(points, map, placements, enough);
  return { correlation: peak.correlation, offCorrelation: off, inside: peak.inside, consistent };
}
