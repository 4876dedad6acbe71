// Hosts and measures for the watermark bench: SSIM, synthetic textures, and the unmarked set of the false-positive
// estimate (photos, their transforms, synthetic images of many kinds, periodic ones included because a tiled
// mark is found by its periodicity).
import type { RawImage } from '../../src/domain/image/raw-image.js';
import type { Attack } from './attacks.js';

/**
 * A deterministic generator for synthetic images (so a run or a failing test reproduces): xorshift32, shifts and
 * xors only, because Math calls are very slow inside jest's module sandbox.
 */
export function xorshift(seed: number): () => number {
  let state = seed >>> 0 || 1;
  return () => {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    return (state >>> 0) / 4294967296;
  };
}

function luma(image: RawImage): Float64Array {
  const out = new Float64Array(image.width * image.height);
  const { pixels, channels } = image;
  for (let i = 0, p = 0; i < out.length; i++, p += channels)
    out[i] = channels === 1 ? pixels[p]! : 0.299 * pixels[p]! + 0.587 * pixels[p + 1]! + 0.114 * pixels[p + 2]!;
  return out;
}

/** Mean SSIM of the luma over 8×8 windows (stride 4), the usual constants. */
export function ssim(a: RawImage, b: RawImage): number {
  const x = luma(a);
  const y = luma(b);
  const w = a.width;
  const c1 = (0.01 * 255) ** 2;
  const c2 = (0.03 * 255) ** 2;
  let total = 0;
  let windows = 0;
  for (let top = 0; top + 8 <= a.height; top += 4) {
    for (let left = 0; left + 8 <= w; left += 4) {
      let sx = 0,
        sy = 0,
        sxx = 0,
        syy = 0,
        sxy = 0;
      for (let j = 0; j < 8; j++) {
        for (let i = 0; i < 8; i++) {
          const u = x[(top + j) * w + left + i]!;
          const v = y[(top + j) * w + left + i]!;
          sx += u;
          sy += v;
          sxx += u * u;
          syy += v * v;
          sxy += u * v;
        }
      }
      const mx = sx / 64,
        my = sy / 64;
      const vx = sxx / 64 - mx * mx,
        vy = syy / 64 - my * my,
        cxy = sxy / 64 - mx * my;
      total += ((2 * mx * my + c1) * (2 * cxy + c2)) / ((mx * mx + my * my + c1) * (vx + vy + c2));
      windows++;
    }
  }
  return total / windows;
}

/** Fractal value noise in colour: a photo-like texture (smooth regions and detail at every scale). */
export function syntheticTexture(index: number, width: number, height: number): RawImage {
  const random = xorshift(0x7e57 + index * 7919);
  const plane = new Float64Array(width * height);
  let amplitude = 1;
  for (let cell = Math.max(width, height) / 2; cell >= 2; cell /= 2) {
    const gw = Math.ceil(width / cell) + 2;
    const gh = Math.ceil(height / cell) + 2;
    const lattice = Float64Array.from({ length: gw * gh }, () => random() * 2 - 1);
    for (let y = 0; y < height; y++) {
      const fy = y / cell;
      const iy = Math.floor(fy);
      const ty = fy - iy;
      for (let x = 0; x < width; x++) {
        const fx = x / cell;
        const ix = Math.floor(fx);
        const tx = fx - ix;
        const top = lattice[iy * gw + ix]! * (1 - tx) + lattice[iy * gw + ix + 1]! * tx;
        const bottom = lattice[(iy + 1) * gw + ix]! * (1 - tx) + lattice[(iy + 1) * gw + ix + 1]! * tx;
        plane[y * width + x]! += amplitude * (top * (1 - ty) + bottom * ty);
      }
    }
    amplitude *= 0.55 + 0.2 * random();
  }
  const tint = [0.7 + 0.6 * random(), 0.7 + 0.6 * random(), 0.7 + 0.6 * random()];
  const pixels = new Uint8ClampedArray(width * height * 3);
  for (let i = 0; i < plane.length; i++)
    for (let c = 0; c < 3; c++) pixels[i * 3 + c] = 128 + 70 * plane[i]! * tint[c]!;
  return { pixels: new Uint8Array(pixels.buffer), width, height, channels: 3 };
}

const KINDS = ['texture', 'stripes', 'checker', 'gradient-noise', 'blocks', 'white-noise', 'dots'] as const;

/** A synthetic unmarked image: one of KINDS, 256–640 px a side, periodic kinds at random periods and angles. */
export function syntheticUnmarked(index: number): RawImage {
  const random = xorshift(0xfa15e + index * 104729);
  const width = 256 + Math.floor(random() * 384);
  const height = 256 + Math.floor(random() * 384);
  const kind = KINDS[index % KINDS.length]!;
  if (kind === 'texture') return syntheticTexture(100000 + index, width, height);
  const period = 4 + random() * 60;
  const angle = random() * Math.PI;
  const c = Math.cos(angle),
    s = Math.sin(angle);
  const pixels = new Uint8ClampedArray(width * height * 3);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const u = (x * c + y * s) / period;
      const v = (-x * s + y * c) / period;
      let value: number;
      if (kind === 'stripes') value = 128 + 100 * Math.sin(2 * Math.PI * u) + 10 * (random() - 0.5);
      else if (kind === 'checker') value = ((Math.floor(u) + Math.floor(v)) & 1) * 180 + 30 + 20 * random();
      else if (kind === 'gradient-noise') value = (x / width) * 200 + 30 * random();
      else if (kind === 'blocks')
        value = ((Math.floor(x / period) * 73 + Math.floor(y / period) * 151) % 256) + 6 * random();
      else if (kind === 'dots')
        value = (u - Math.floor(u) - 0.5) ** 2 + (v - Math.floor(v) - 0.5) ** 2 < 0.06 ? 230 : 40 + 10 * random();
      else value = 256 * random();
      const p = (y * width + x) * 3;
      pixels[p] = value;
      pixels[p + 1] = value * 0.9 + 10;
      pixels[p + 2] = value * 0.8 + 20;
    }
  }
  return { pixels: new Uint8Array(pixels.buffer), width, height, channels: 3 };
}

/** At least `count` unmarked images: the photos, every attack on each, then synthetic images. */
export async function unmarkedSet(
  photos: RawImage[],
  attacks: ReadonlyArray<readonly [string, Attack]>,
  count: number,
): Promise<RawImage[]> {
  const out: RawImage[] = [...photos];
  for (const photo of photos) for (const [, attack] of attacks) out.push(await attack(photo));
  for (let i = 0; out.length < count; i++) out.push(syntheticUnmarked(i));
  return out;
}

/**
 * The low-texture class (flat, smooth, grayscale, upscaled content): hosts a photo bench never sees, made
 * here from a seed. Each is grey (R = G = B) unless said, about 1 MP, with the format a sign of it would arrive in.
 * Kept apart from the tuning probes: other generators and seeds than the ones the strength levels were chosen on.
 */
export interface ClassHost {
  readonly label: string;
  readonly image: RawImage;
  readonly format: 'image/jpeg' | 'image/png';
}

function grey(width: number, height: number, value: (x: number, y: number) => number): RawImage {
  const pixels = new Uint8ClampedArray(width * height * 3);
  for (let y = 0; y < height; y++)
    for (let x = 0; x < width; x++) {
      const v = value(x, y);
      const o = (y * width + x) * 3;
      pixels[o] = pixels[o + 1] = pixels[o + 2] = v;
    }
  return { pixels: new Uint8Array(pixels.buffer), width, height, channels: 3 };
}

/** Bilinear enlargement of a grey plane to width × height (the "upscaled" in the class). */
function upscaled(plane: Float64Array, side: number, width: number, height: number): RawImage {
  return grey(width, height, (x, y) => {
    const fx = Math.min(side - 1.001, ((x + 0.5) * side) / width - 0.5);
    const fy = Math.min(side - 1.001, ((y + 0.5) * side) / height - 0.5);
    const ix = Math.max(0, Math.floor(fx));
    const iy = Math.max(0, Math.floor(fy));
    const tx = Math.max(0, fx - ix);
    const ty = Math.max(0, fy - iy);
    const at = (u: number, v: number) => plane[v * side + u]!;
    return (
      (at(ix, iy) * (1 - tx) + at(ix + 1, iy) * tx) * (1 - ty) +
      (at(ix, iy + 1) * (1 - tx) + at(ix + 1, iy + 1) * tx) * ty
    );
  });
}

export async function lowTextureClass(seed: number): Promise<ClassHost[]> {
  const random = xorshift(0xf1a7 + seed * 65537);
  const [w, h] = [1152, 864];
  // A grass-like grayscale texture at 512², upscaled 2.25× (blades: streaks of random phase, plus noise).
  const side = 512;
  const grass = new Float64Array(side * side);
  const phases = Array.from({ length: side }, () => random() * 2 * Math.PI);
  for (let y = 0; y < side; y++)
    for (let x = 0; x < side; x++)
      grass[y * side + x] =
        105 + 32 * Math.sin(x * 0.85 + phases[x]! + 2.5 * Math.sin(y * 0.04)) + 36 * (random() - 0.5);
  // Noise alone at 256², upscaled 4.5× (a blurry grain texture).
  const grain = Float64Array.from({ length: 256 * 256 }, () => 128 + 50 * (random() - 0.5));
  const level = 60 + Math.floor(random() * 140);
  const scan = (x: number, y: number) => {
    // Paper: a faint gradient and grain; text lines: dark strokes every 28 px, 70 % of the width.
    const line = y % 28 < 3 && x > 90 && x < w - 90 && Math.sin(x * 0.37 + y) > -0.2;
    return (line ? 60 : 236 - y / 60) + 6 * (random() - 0.5);
  };
  const lineArt = (x: number, y: number) => {
    const cx = w / 2;
    const cy = h / 2;
    const r = Math.hypot(x - cx, y - cy);
    const ring = Math.abs((r % 90) - 45) < 1.5;
    const diagonal = Math.abs(((x + y) % 160) - 80) < 1;
    return ring || diagonal ? 20 : 250;
  };
  const screenshot = (x: number, y: number) => {
    // A UI: a title bar, a side panel, flat cards with text-like strokes, on a light background.
    if (y < 48) return 52;
    if (x < 220) return y % 40 < 2 ? 200 : 236;
    const card = (x - 240) % 300 < 280 && (y - 68) % 240 < 220;
    if (!card) return 246;
    const text = (y - 68) % 240 > 30 && (y - 68) % 24 < 8 && ((x * 7) ^ (y * 3)) % 11 < 7 && (x - 240) % 300 < 240;
    return text ? 70 : 255;
  };
  return [
    { label: 'plain grey', image: grey(w, h, () => level), format: 'image/png' },
    { label: 'near-plain', image: grey(w, h, (x, y) => level + ((x * 5 + y * 3) % 3) - 1), format: 'image/png' },
    { label: 'linear gradient', image: grey(w, h, (x) => 30 + (190 * x) / w), format: 'image/jpeg' },
    {
      label: 'radial gradient',
      image: grey(w, h, (x, y) => 230 - 160 * Math.min(1, Math.hypot(x - w / 2, y - h / 2) / (0.6 * w))),
      format: 'image/jpeg',
    },
    { label: 'grass 512² ×2.25', image: upscaled(grass, side, w, h), format: 'image/jpeg' },
    { label: 'grain 256² ×4.5', image: upscaled(grain, 256, w, h), format: 'image/jpeg' },
    { label: 'scan', image: grey(w, h, scan), format: 'image/jpeg' },
    { label: 'line art', image: grey(w, h, lineArt), format: 'image/png' },
    { label: 'screenshot', image: grey(w, h, screenshot), format: 'image/png' },
  ];
}
