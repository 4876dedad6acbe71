import type { Detection, ImageWatermarkAlgorithm } from './algorithm.js';
import { convEncode, codedLength, viterbiDecode } from './conv-code.js';
import { addBasis, basis, BLOCK, project, type Frequency } from './dct.js';
import { FRAME_BITS, frameBits, PAYLOAD_BYTES, unframe } from './frame.js';
import { addLumaDelta, lumaGrid } from './luma.js';
import { keyedRandom, permutation, seededRandom } from './prng.js';
import { psnrOfChange } from './psnr.js';
import { assertWellFormed, ImageRejectedError, type RawImage } from './raw-image.js';
import { composeKernels, resamplePlane, tentKernel } from './resample.js';

export interface DctQimParameters {
  /** Side of the square luma grid the mark is written on, whatever the image's size (a multiple of 8). */
  readonly grid: number;
  /** DCT coefficients of each 8×8 grid block that carry bits. */
  readonly frequencies: ReadonlyArray<Frequency>;
  /** Quantisation step of the dither modulation, in luma levels of the orthonormal DCT. */
  readonly step: number;
  /**
   * Seed of the layout (bit-to-slot assignment and dithers): a public number (cairn-dct-v1, one sequence for
   * both), or two 32-byte secrets, one per part, so that neither can be rebuilt without the key.
   */
  readonly seed: number | KeyedSeed;
  /** Passes that correct the mark for what the grid → image → grid round trip smooths away. */
  readonly refinements: number;
  /** Detections clearer than this only: a second guard behind the check. */
  readonly minConfidence: number;
  /** Smallest image side embed accepts. */
  readonly minEmbedSize: number;
  /** Below this side a detector has too few pixels per grid cell to read anything; it answers "no mark". */
  readonly minDetectSize: number;
}

export interface KeyedSeed {
  readonly layout: Uint8Array;
  readonly dither: Uint8Array;
}

interface Layout {
  readonly blocksPerSide: number;
  readonly bases: ReadonlyArray<Float64Array>;
  /** Coded bit carried by each slot; slot = block · frequencies + frequency. */
  readonly bitOfSlot: Uint16Array;
  readonly dither: Float64Array;
  /** Slots per coded bit. */
  readonly votes: Uint16Array;
}

const CODED_BITS = codedLength(FRAME_BITS);

function buildLayout(p: DctQimParameters): Layout {
  if (p.grid % BLOCK !== 0) throw new Error('grid must be a multiple of 8');
  const blocksPerSide = p.grid / BLOCK;
  const slots = blocksPerSide * blocksPerSide * p.frequencies.length;
  if (slots < CODED_BITS * 4) throw new Error('grid too small for the code');
  // cairn-dct-v1 draws the dithers from the same public sequence right after the permutation; that order
  // is part of its frozen layout.
  const shared = typeof p.seed === 'number' ? seededRandom(p.seed) : undefined;
  const random = shared ?? keyedRandom((p.seed as KeyedSeed).layout);
  const ditherRandom = shared ?? keyedRandom((p.seed as KeyedSeed).dither);
  // Bits go to slots in a pseudo-random order, so each bit's copies are spread over the whole picture and a
  // damaged region (a logo, a flat sky that JPEG wipes) costs every bit a few votes instead of some bits all.
  const order = permutation(slots, random);
  const bitOfSlot = new Uint16Array(slots);
  const votes = new Uint16Array(CODED_BITS);
  for (let i = 0; i < slots; i++) {
    const bit = i % CODED_BITS;
    bitOfSlot[order[i]!] = bit;
    votes[bit]!++;
  }
  const dither = new Float64Array(slots);
  for (let s = 0; s < slots; s++) dither[s] = ditherRandom() * p.step;
  return { blocksPerSide, bases: p.frequencies.map(basis), bitOfSlot, dither, votes };
}

/** The lattice point nearest `value` among those that encode `bit`: d + bit·Δ/2 + kΔ. */
function quantise(value: number, bit: number, dither: number, step: number): number {
  const offset = dither + (bit ? step / 2 : 0);
  return offset + step * Math.round((value - offset) / step);
}

/**
 * Mark on a fixed-size luma grid: 8×8 DCT blocks of the grid, a few low-to-mid frequency coefficients per
 * block carrying one coded bit each by dither modulation (QIM). See services/watermark/docs/image-v1.md.
 */
export class DctQimWatermark implements ImageWatermarkAlgorithm {
  readonly payloadBytes = PAYLOAD_BYTES;
  readonly minEmbedSize: number;
  private readonly layout: Layout;

  constructor(
    readonly name: string,
    private readonly params: DctQimParameters,
  ) {
    this.minEmbedSize = params.minEmbedSize;
    this.layout = buildLayout(params);
  }

  /** Side of the luma grid it reads (lumaOf() grids are interchangeable between equal sizes). */
  get gridSize(): number {
    return this.params.grid;
  }

  embed(image: RawImage, payload: Uint8Array): RawImage {
    return this.embedMeasured(image, payload).image;
  }

  /**
   * embed, answering the marked image's PSNR too (measured as the samples are written). With `inPlace` the caller
   * hands `image`'s buffer over and gets it back marked (no copy of the pixels).
   */
  embedMeasured(
    image: RawImage,
    payload: Uint8Array,
    { inPlace = false }: { inPlace?: boolean } = {},
  ): { image: RawImage; psnrDb: number } {
    assertWellFormed(image);
    const { width, height } = image;
    if (width < this.minEmbedSize || height < this.minEmbedSize) {
      throw new ImageRejectedError(
        `image is ${width}×${height}; a watermark needs at least ${this.minEmbedSize}×${this.minEmbedSize} pixels`,
      );
    }
    const { grid, step, refinements } = this.params;
    const { bases, bitOfSlot, dither } = this.layout;
    const code = convEncode(frameBits(payload));
    const host = lumaGrid(image, grid, grid);

    const targets = new Float64Array(bitOfSlot.length);
    this.forEachSlot((slot, origin, k) => {
      targets[slot] = quantise(project(host, origin, grid, bases[k]!), code[bitOfSlot[slot]!]!, dither[slot]!, step);
    });

    // The detector sees the grid of the marked image, i.e. host + down(up(delta)), not host + delta: the
    // enlargement to the image and the reduction back smooth the change. Solve for the delta whose round
    // trip lands on the targets (a few fixed-point passes; the round trip is close to identity at these
    // frequencies, so it converges fast).
    const roundTripX = composeKernels(tentKernel(grid, width), tentKernel(width, grid));
    const roundTripY = composeKernels(tentKernel(grid, height), tentKernel(height, grid));
    const delta = new Float32Array(grid * grid);
    for (let pass = 0; pass <= refinements; pass++) {
      const seen = pass === 0 ? host : addPlanes(host, resamplePlane(delta, roundTripX, roundTripY));
      this.forEachSlot((slot, origin, k) => {
        const b = bases[k]!;
        addBasis(delta, origin, grid, b, targets[slot]! - project(seen, origin, grid, b));
      });
    }

    const marked: RawImage = inPlace ? image : { ...image, pixels: Uint8Array.from(image.pixels) };
    const squaredError = addLumaDelta(marked, delta, grid, grid);
    return { image: marked, psnrDb: psnrOfChange(image, squaredError) };
  }

  detect(image: RawImage): Detection | null {
    const luma = this.lumaOf(image);
    return luma ? this.detectLuma(luma) : null;
  }

  /**
   * The luma grid this watermark reads, or null when the image is too small to read. Decoders with the same
   * grid size share it, so trying several keys costs one resampling (the expensive part on large images).
   */
  lumaOf(image: RawImage): Float32Array | null {
    assertWellFormed(image);
    if (Math.min(image.width, image.height) < this.params.minDetectSize) return null;
    return lumaGrid(image, this.params.grid, this.params.grid);
  }

  /** detect() on a grid from lumaOf() of a watermark with the same grid size. */
  detectLuma(luma: Float32Array): Detection | null {
    const soft = this.softBits(luma);
    const bits = viterbiDecode(soft, FRAME_BITS);
    const payload = unframe(bits);
    if (!payload) return null;
    // Confidence: how strongly the votes agree with the codeword actually decoded. Unmarked images reach
    // about 0.1 (the decoder picks the best-fitting path through noise); marked ones 0.3 to 1.
    const code = convEncode(bits);
    let agreement = 0;
    for (let i = 0; i < CODED_BITS; i++) agreement += code[i] ? -soft[i]! : soft[i]!;
    const confidence = Math.max(0, Math.min(1, agreement / CODED_BITS));
    return confidence >= this.params.minConfidence ? { payload, confidence } : null;
  }

  /** Mean vote per coded bit, in -1..1: +1 when every copy sits on a bit-0 lattice point, -1 on bit-1. */
  private softBits(grid: Float32Array): Float64Array {
    const { bases, bitOfSlot, dither, votes } = this.layout;
    const { step } = this.params;
    const soft = new Float64Array(CODED_BITS);
    this.forEachSlot((slot, origin, k) => {
      const c = project(grid, origin, this.params.grid, bases[k]!);
      soft[bitOfSlot[slot]!]! += Math.cos((2 * Math.PI * (c - dither[slot]!)) / step);
    });
    for (let i = 0; i < CODED_BITS; i++) soft[i]! /= votes[i]!;
    return soft;
  }

  private forEachSlot(visit: (slot: number, origin: number, k: number) => void): void {
    const { blocksPerSide, bases } = this.layout;
    const grid = this.params.grid;
    let slot = 0;
    for (let by = 0; by < blocksPerSide; by++) {
      for (let bx = 0; bx < blocksPerSide; bx++) {
        const origin = by * BLOCK * grid + bx * BLOCK;
        for (let k = 0; k < bases.length; k++) visit(slot++, origin, k);
      }
    }
  }
}

function addPlanes(a: Float32Array, b: Float32Array): Float32Array {
  const out = new Float32Array(a.length);
  for (let i = 0; i < a.length; i++) out[i] = a[i]! + b[i]!;
  return out;
}
