// Hosts and measures for the watermark bench: SSIM, synthetic textures, and the unmarked set of the false-positive
// estimate (photos, their transforms, synthetic images of many kinds, periodic ones included because a tiled
// mark is found by its periodicity).
import type { RawImage } from '../../../services/watermark/src/domain/image/raw-image.js';
import type { Attack } from './attacks.js';

function xorshift(seed: number): () => number {
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
