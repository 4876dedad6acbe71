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
