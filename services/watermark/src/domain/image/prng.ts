import { createCipheriv } from 'node:crypto';

/**
 * A small deterministic generator for the mark's layout (which block carries which bit, the dither of each
 * slot). Not for secrets: embedder and detector only need to derive the same sequence from the same seed.
 * A Weyl sequence (golden-ratio increment) through a 32-bit avalanche mix.
 */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x9e3779b9) >>> 0;
    let z = state;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
    z ^= z >>> 16;
    return (z >>> 0) / 4294967296;
  };
}

/** A uniformly random permutation of 0..n-1 (Fisher–Yates). */
export function permutation(n: number, random: () => number): Uint32Array {
  const out = new Uint32Array(n);
  for (let i = 0; i < n; i++) out[i] = i;
  for (let i = n - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    const t = out[i]!;
    out[i] = out[j]!;
    out[j] = t;
  }
  return out;
}

/**
 * A keyed generator: uniform numbers in [0, 1) from the AES-256-CTR keystream of a 32-byte secret. Unlike
 * seededRandom, whoever does not hold the secret cannot reproduce (or search for) the sequence, so a layout
 * drawn from it cannot be rebuilt from the source code.
 */
export function keyedRandom(secret: Uint8Array): () => number {
  if (secret.length !== 32) throw new Error('a keyed layout needs a 32-byte secret');
  const cipher = createCipheriv('aes-256-ctr', secret, Buffer.alloc(16));
  const chunk = Buffer.alloc(4096);
  let stream = Buffer.alloc(0);
  let next = 0;
  return () => {
    if (next >= stream.length) {
      stream = cipher.update(chunk);
      next = 0;
    }
    const word = stream.readUInt32LE(next);
    next += 4;
    return word / 4294967296;
  };
}
