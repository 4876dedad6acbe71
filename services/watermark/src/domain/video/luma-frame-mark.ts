import {
  CAIRN_SYNC_V2,
  createSyncImageWatermark,
  GRID_AREA,
  gridSize,
  maskingWeights,
} from '../image/cairn-sync-v2.js';
import { LumaResampler } from '../image/luma.js';
import { resampleRow, tentKernel } from '../image/resample.js';
import type { RawImage } from '../image/raw-image.js';

/**
 * Video frames carry the image watermark cairn-sync-v2 (same key, same payload scheme), written frame by frame on
 * the luma plane. What v2 computes per image splits in two: the keyed tile with the coded payload is the same for
 * every frame of a video, so it is made once; only the perceptual mask (it follows the picture) and the addition
 * are redone per frame. A frame marked here is a v2 mark any v2 detector reads.
 */

/** Chips per side of cairn-sync-v2's tile (one embedding-grid sample each). */
export const SYNC_TILE_SIDE = 32;
/** The flat frame the tile is read from: its grid is the frame itself (256² samples, identity resampling). */
const FLAT_SIDE = 256;
const FLAT_LEVEL = 128;

/**
 * The ±1 chips of the v2 tile that carries `payload` under `key`, read off v2's own embedding of a flat 256² frame:
 * there the mask is 1 everywhere, the grid is the frame and the gain puts every chip at ±1.85 levels, so each pixel
 * of the first 32×32 is 128 ± 2 and its sign is the chip. (No second copy of v2's layout code exists to drift.)
 */
export function syncTile(key: Uint8Array, payload: Uint8Array): Int8Array {
  const flat: RawImage = {
    pixels: new Uint8Array(FLAT_SIDE * FLAT_SIDE).fill(FLAT_LEVEL),
    width: FLAT_SIDE,
    height: FLAT_SIDE,
    channels: 1,
  };
  const marked = createSyncImageWatermark(key).embed(flat, payload);
  const tile = new Int8Array(SYNC_TILE_SIDE * SYNC_TILE_SIDE);
  for (let y = 0; y < FLAT_SIDE; y++) {
    for (let x = 0; x < FLAT_SIDE; x++) {
      const d = marked.pixels[y * FLAT_SIDE + x]! - FLAT_LEVEL;
      const chip = (y % SYNC_TILE_SIDE) * SYNC_TILE_SIDE + (x % SYNC_TILE_SIDE);
      const sign = d > 0 ? 1 : -1;
      // Every repetition must agree and no chip may be zero: anything else means v2's embedding changed shape.
      if (d === 0 || (tile[chip] !== 0 && tile[chip] !== sign))
        throw new Error('cairn-sync-v2 no longer embeds a flat frame as its bare tile; the video mark cannot be made');
      tile[chip] = sign;
    }
  }
  return tile;
}

/**
 * The embedding grid's area for a frame size. cairn-sync-v2 puts an image on about 256² samples whatever its size,
 * so a chip is 1/341 of a 16:9 frame's width: 3.75 pixels at 720p, which H.264 CRF 28 keeps, but 2.5 at 480p and
 * 1.9 at 360p, which it smooths away. Frames whose chip would be under CHIP_PIXELS get a grid a quarter the area
 * (chips twice as wide: 5 pixels at 480p); frames where even those would be under SMALL_CHIP_PIXELS (360p: 3.75) get
 * one 6.25 times smaller (chips 2.5 times the image's: 4.7 pixels at 360p, so a copy halved to 180p still has
 * chips of 2.3 pixels, about what a halved 480p copy keeps). A coarser grid holds fewer tiles (a 640×360 frame:
 * 4.3 × 2.4), hence fewer chips to read; 2.5 read more halved 360p copies than 2.25 or 3 (measured: README "Grid by
 * frame size"). The detector tries every area (VIDEO_GRID_AREAS).
 */
export function videoGridArea(width: number, height: number): number {
  const area = width * height;
  if (area / GRID_AREA >= CHIP_PIXELS * CHIP_PIXELS) return GRID_AREA;
  return area / COARSE_GRID_AREA >= SMALL_CHIP_PIXELS * SMALL_CHIP_PIXELS ? COARSE_GRID_AREA : SMALL_GRID_AREA;
}

/** A chip's side in pixels at 720p (1280 / 341.3), the smallest measured to survive H.264 CRF 28. */
const CHIP_PIXELS = 3.75;
/** Below this a coarse chip is too small to outlive halving and CRF 28 (480p's 5 pixels do, 360p's 3.75 do not). */
const SMALL_CHIP_PIXELS = 4.5;
const COARSE_GRID_AREA = GRID_AREA / 4;
const SMALL_GRID_AREA = GRID_AREA / 6.25;
/** The grid areas a video mark can be on, most common first: what the detector tries. */
export const VIDEO_GRID_AREAS: ReadonlyArray<number> = [GRID_AREA, COARSE_GRID_AREA, SMALL_GRID_AREA];

/**
 * Frames a second the detector averages into a window, by the received frame's size: 15 for frames the image grid
 * marks (720p and above), every frame up to 30 below. Each frame's encoding noise is its own, so more frames average
 * it down; small frames need that (their marks have fewer chips: a 360p clip halved and re-encoded at CRF 28 read
 * under more keys at 30, README "Grid by frame size") and cost little (a 360p frame is a quarter of a 720p one),
 * while at 720p every key already reads at 15 and 30 would add about half of detection's CPU.
 */
export function detectionSampleFps(width: number, height: number): number {
  return videoGridArea(width, height) === GRID_AREA ? 15 : 30;
}

/**
 * The mark's RMS on a frame of this grid area: the small grid's chips are wide enough to outlive the signing encode
 * itself, so at the strength of the others the answer lands about 0.1 dB lower against the upload (the photo at
 * 360p: 39.9–40.0 dB); 3 % weaker puts it back at 40.2 and read 11 of 16 halved copies where full strength read 12
 * (README "Grid by frame size").
 */
export function videoMarkStrength(strengthRms: number, gridArea: number): number {
  return gridArea === SMALL_GRID_AREA ? strengthRms * SMALL_GRID_STRENGTH : strengthRms;
}
const SMALL_GRID_STRENGTH = 0.97;

/**
 * A grid cell's share of the mark by its luma: 1 from DARK_LUMA up, falling linearly to `floor` at black. The eye
 * sees a given change in levels as a larger contrast on a dark background (night scenes, shadows, letterbox bars).
 * Measured on the camera-like clips of the bench (README "Fidelity on camera-like clips").
 */
export function luminanceWeight(level: number, floor: number): number {
  if (level >= DARK_LUMA) return 1;
  const t = Math.max(0, level - BLACK_LUMA) / (DARK_LUMA - BLACK_LUMA);
  return floor + (1 - floor) * t;
}
/** Luma from which a cell takes its whole share; video black (16 in the limited range) takes `floor`. */
const DARK_LUMA = 64;
const BLACK_LUMA = 16;
/** The share video black takes. */
export const DARK_FLOOR = 0.5;

/** Per-frame marking of one video's luma planes with one tile: everything frame-independent is made once. */
export class LumaFrameMarker {
  readonly gridWidth: number;
  readonly gridHeight: number;
  /** The tile repeated over the grid from its corner (±1). */
  private readonly pattern: Float32Array;
  /** RMS of an enlarged grid change over its RMS on the grid (bilinear enlargement smooths the chips). */
  private readonly enlargement: number;
  private readonly delta: Float32Array;
  /** The frame size's resampling kernels and rows, made once for the video. */
  private readonly resampler: LumaResampler;
  /**
   * The mask's picture: every other pixel of every other row, when that still has at least a pixel per grid
   * sample (for every size of 360p and up videoGridArea picks: 1.9 pixels per sample at worst). The mask is a local
   * contrast, clamped to 0.5–1.5× its mean, so a quarter of the pixels measure it as well as all; reducing all of
   * them to the grid was a third of a frame's marking.
   */
  private readonly maskSource: { readonly plane: Uint8Array; readonly resampler: LumaResampler } | null;

  constructor(
    tile: Int8Array,
    readonly width: number,
    readonly height: number,
    private readonly strengthRms: number = CAIRN_SYNC_V2.strengthRms,
    /** The embedding grid's area (videoGridArea); GRID_AREA makes exactly an image's v2 mark. */
    readonly gridArea: number = GRID_AREA,
    /** The share of the mark video black takes (luminanceWeight); 1: every cell alike, as an image's v2 mark. */
    private readonly darkFloor: number = DARK_FLOOR,
  ) {
    if (tile.length !== SYNC_TILE_SIDE * SYNC_TILE_SIDE) throw new Error('a sync tile is 32×32 chips');
    [this.gridWidth, this.gridHeight] = gridSize(width, height, 1, gridArea);
    const gw = this.gridWidth;
    const gh = this.gridHeight;
    this.pattern = new Float32Array(gw * gh);
    for (let y = 0; y < gh; y++)
      for (let x = 0; x < gw; x++)
        this.pattern[y * gw + x] = tile[(y % SYNC_TILE_SIDE) * SYNC_TILE_SIDE + (x % SYNC_TILE_SIDE)]!;
    this.enlargement = enlargedRms(this.pattern, gw, gh, width, height);
    this.delta = new Float32Array(gw * gh);
    this.resampler = new LumaResampler(width, height, gw, gh);
    const [hw, hh] = [width >> 1, height >> 1];
    this.maskSource =
      hw >= gw && hh >= gh ? { plane: new Uint8Array(hw * hh), resampler: new LumaResampler(hw, hh, gw, gh) } : null;
  }

  /**
   * Marks the 8-bit luma plane `luma` (width × height, row-major) in place, as v2 marks an image: the tile times
   * v2's own perceptual mask (maskingWeights: 5×5 local deviation over its mean, clamped; measured on maskGrid),
   * scaled so the change reaching the pixels has RMS `strengthRms`, enlarged bilinearly and added. Answers the
   * squared error it added (for PSNR).
   */
  mark(luma: Uint8Array): number {
    const { width, height } = this;
    if (luma.length < width * height) throw new Error(`a ${width}×${height} luma plane needs ${width * height} bytes`);
    const grid = this.maskGrid(luma);
    const weight = maskingWeights(grid, this.gridWidth, this.gridHeight);
    let energy = 0;
    for (let i = 0; i < this.delta.length; i++) {
      const d = this.pattern[i]! * weight[i]!;
      energy += d * d;
      // Dark cells take less (luminanceWeight); the gain below is the unweighted frame's, so what they give up is
      // not moved onto the rest of the frame: a frame with dark regions gets a quieter mark, not a louder one elsewhere.
      this.delta[i] = d * luminanceWeight(grid[i]!, this.darkFloor);
    }
    const gain = this.strengthRms / Math.max(1e-9, Math.sqrt(energy / this.delta.length) * this.enlargement);
    for (let i = 0; i < this.delta.length; i++) this.delta[i]! *= gain;
    return this.resampler.addPlaneDelta(luma, this.delta);
  }

  /** The luma grid the mask is measured on: of the frame, or of its every other pixel (see maskSource). */
  private maskGrid(luma: Uint8Array): Float32Array {
    const { width, height } = this;
    if (!this.maskSource) return this.resampler.grid({ pixels: luma, width, height, channels: 1 });
    const { plane, resampler } = this.maskSource;
    const hw = resampler.width;
    const hh = resampler.height;
    for (let y = 0, i = 0; y < hh; y++) for (let x = 0, p = 2 * y * width; x < hw; x++, p += 2) plane[i++] = luma[p]!;
    return resampler.grid({ pixels: plane, width: hw, height: hh, channels: 1 });
  }
}

/** RMS of `plane` (grid) enlarged to width × height bilinearly, over its RMS on the grid. */
function enlargedRms(plane: Float32Array, gw: number, gh: number, width: number, height: number): number {
  const kx = tentKernel(gw, width);
  const ky = tentKernel(gh, height);
  const wide = new Float32Array(width * gh);
  for (let gy = 0; gy < gh; gy++) resampleRow(plane, gy * gw, kx, wide, gy * width);
  let enlarged = 0;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      let v = 0;
      for (let k = ky.start[y]!; k < ky.start[y + 1]!; k++) v += ky.weight[k]! * wide[ky.index[k]! * width + x]!;
      enlarged += v * v;
    }
  }
  let onGrid = 0;
  for (let i = 0; i < plane.length; i++) onGrid += plane[i]! * plane[i]!;
  return Math.sqrt(enlarged / (width * height)) / Math.max(1e-9, Math.sqrt(onGrid / plane.length));
}
