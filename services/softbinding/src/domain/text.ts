/**
 * Text fingerprint `cairn.minhash.v1`: a MinHash signature of the shingles of the normalised text, plus LSH band
 * keys for an index. Deterministic across processes and machines (fixed seeds, integer-only hashing, no locale).
 *
 * Pipeline:
 *  1. normalise: Unicode NFKC; lower-casing (`toLowerCase`, locale-independent, plus ß → ss and final ς → σ, i.e.
 *     simple case folding for the common cases); apostrophes (' ’ ‘ ʼ `) are removed so "don't" = "don’t" = "dont",
 *     and so are format characters (\p{Cf}: soft hyphens, zero-width joiners, BOMs) except the zero-width space,
 *     a word break (Thai, Khmer), which becomes a space;
 *     every other punctuation (\p{P}) or symbol (\p{S}) character and every run of whitespace/control characters
 *     becomes one space; leading/trailing space trimmed. Diacritics are kept (stripping marks would destroy
 *     vowel signs in e.g. Devanagari).
 *  2. shingles: word 3-grams (the words of the normalised text, three at a time, joined by one space), as a set.
 *     Chosen from exact Jaccard distributions measured during development on the 15 passages and transforms of
 *     test/text.test.ts (edited words drawn with another seed): lowest near-duplicate vs highest different pair —
 *       word 1-grams 0.635 vs 0.204, word 2-grams 0.579 vs 0.028, word 3-grams 0.547 vs 0.009,
 *       word 4-grams 0.447 vs 0.006, char 5-grams 0.598 vs 0.099, char 7-grams 0.586 vs 0.045, char 9-grams 0.574 vs 0.022.
 *     Word 3-grams and char 7/9-grams separate about equally well; word 3-grams win on the background: unrelated
 *     English shares almost no word trigrams (median 0.000, max 0.009) where char n-grams share common fragments
 *     (" the ", "tion "), which at index scale means fewer false LSH candidates; and a 250-word text has ~250
 *     shingles instead of ~1,400. Char n-grams would tolerate typos better and would suit scripts written without
 *     spaces (Chinese, Japanese, Thai), which word shingles fingerprint poorly — a known limitation of v1.
 *  3. MinHash, 128 slots of 32 bits. Hash of a shingle: MurmurHash3_x86_32 of its UTF-8 bytes, seed 0 → `h`.
 *     Slot i holds min over shingles of fmix32(h XOR SEEDS[i]), where fmix32 is MurmurHash3's 32-bit finaliser
 *     (a bijection with full avalanche) and SEEDS[i] = mix((i + 2) · 0x9E3779B9 mod 2³²) with mix the
 *     "lowbias32" integer hash (z ^= z >>> 16; z *= 0x21F0AAAD; z ^= z >>> 15; z *= 0x735A2D97; z ^= z >>> 15).
 *     All arithmetic is unsigned 32-bit; multiplications are done in 16-bit halves (no Math.imul: Math.* crawls
 *     inside jest's VM sandbox). Changing any of this changes every signature: it would be a new alg name.
 *  4. Similarity: the fraction of the 128 slots that are equal, an unbiased estimate of the Jaccard index of the
 *     two shingle sets (standard error ≈ sqrt(J(1−J)/128) ≤ 0.044).
 *  5. LSH: 64 bands × 2 rows. Band b's key = b · 2³² + a murmur3-style hash (seeded by b) of its 2 slot values: an
 *     integer in [0, 2³⁸), exact in a JS number and a Postgres bigint; a btree on the key finds the candidates that
 *     share at least one band, which `estimateSimilarity(...) >= TEXT_MATCH_THRESHOLD` then confirms.
 *     P(candidate) = 1 − (1 − J²)⁶⁴:
 *       J = 0.01 → 0.006, J = 0.05 → 0.15, J = 0.1 → 0.47, J = 0.2 → 0.93, J = 0.3 → 0.998,
 *       J = 0.5 → 1 − 10⁻⁸, J = 0.7 → 1 − 10⁻¹⁹, J = 0.9 → 1 − 10⁻⁴⁶.
 *     Two rows per band (not 32 × 4: P = 0.23 at J = 0.3, 0.56 at 0.4, 0.87 at 0.5) so the index finds nearly every
 *     pair at the threshold; the price is false candidates at J ≈ 0.1 (same-topic texts sharing phrases), each
 *     costing one 128-slot comparison, and 64 index rows per text.
 */
import { FINGERPRINT_ALG } from '@cairn/catalog';
export const TEXT_ALG = FINGERPRINT_ALG.text;
export const SIGNATURE_SLOTS = 128;
export const LSH_BANDS = 64;
export const LSH_ROWS = SIGNATURE_SLOTS / LSH_BANDS;
/** Words per shingle. */
export const SHINGLE_WORDS = 3;
/** Hex digits of a binding value: 128 slots × 8. */
export const SIGNATURE_HEX_DIGITS = SIGNATURE_SLOTS * 8;

/**
 * A pair of texts is a match at an estimated Jaccard of at least this (services/softbinding/docs/text.md,
 * test/text.test.ts): every near-duplicate transform measured ≥ 0.453 (estimate; the hardest: 10% of words edited, the
 * longest sentence deleted), every pair of different passages ≤ 0.016. 0.3 sits in the gap with room for the
 * estimator's noise (σ ≤ 0.044: a true 0.5 reads ≥ 0.37 at −3σ; a true 0.05 reads ≤ 0.11 at +3σ), and LSH finds a pair
 * at 0.3 with probability 0.998.
 */
export const TEXT_MATCH_THRESHOLD = 0.3;

/**
 * Texts shorter than this (normalised characters) or with fewer than `MIN_TEXT_SHINGLES` distinct shingles are
 * refused: a short text has few shingles, so its estimate is coarse and boilerplate ("all rights reserved…",
 * "click here to…") makes unrelated short texts collide.
 */
export const MIN_TEXT_CHARS = 200;
export const MIN_TEXT_SHINGLES = 24;

export type TextFingerprintErrorCode = 'too_short' | 'invalid_value';

/** A text that cannot be fingerprinted reliably; `code` maps to a client-facing message. */
export class TextFingerprintError extends Error {
  constructor(
    readonly code: TextFingerprintErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'TextFingerprintError';
  }
}

export interface TextFingerprint {
  readonly alg: string;
  /** 128 MinHash values. */
  readonly signature: Uint32Array;
  /** 64 LSH band keys (non-negative integers < 2³⁸), band b's key in [b·2³², (b+1)·2³²). */
  readonly bands: number[];
}

// ---------------------------------------------------------------------------------------------------------------
// 32-bit arithmetic without Math.imul.

/** (a × b) mod 2³², both operands treated as unsigned 32-bit; every intermediate is exact in a double (< 2⁵³). */
function mul32(a: number, b: number): number {
  const lo = (a & 0xffff) * (b >>> 0); // < 2⁴⁸
  const hi = ((a >>> 16) * (b >>> 0)) & 0xffff; // only the low 16 bits survive the shift by 16
  return (lo + hi * 65536) >>> 0;
}

function rotl32(x: number, r: number): number {
  return ((x << r) | (x >>> (32 - r))) >>> 0;
}

/** MurmurHash3's 32-bit finaliser. */
export function fmix32(h: number): number {
  h = (h ^ (h >>> 16)) >>> 0;
  h = mul32(h, 0x85ebca6b);
  h = (h ^ (h >>> 13)) >>> 0;
  h = mul32(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

const C1 = 0xcc9e2d51;
const C2 = 0x1b873593;

function mixK(k: number): number {
  return mul32(rotl32(mul32(k, C1), 15), C2);
}

function mixH(h: number, k: number): number {
  h = (h ^ mixK(k)) >>> 0;
  return (mul32(rotl32(h, 13), 5) + 0xe6546b64) >>> 0;
}

/** MurmurHash3_x86_32 of `bytes` with `seed` (little-endian blocks, as in the reference implementation). */
export function murmur3(bytes: Uint8Array, seed = 0): number {
  let h = seed >>> 0;
  const n = bytes.length;
  const blocks = n & ~3;
  for (let i = 0; i < blocks; i += 4)
    h = mixH(h, (bytes[i]! | (bytes[i + 1]! << 8) | (bytes[i + 2]! << 16) | (bytes[i + 3]! << 24)) >>> 0);
  let k = 0;
  const tail = n & 3;
  if (tail === 3) k ^= bytes[blocks + 2]! << 16;
  if (tail >= 2) k ^= bytes[blocks + 1]! << 8;
  if (tail >= 1) {
    k ^= bytes[blocks]!;
    h = (h ^ mixK(k >>> 0)) >>> 0;
  }
  return fmix32((h ^ n) >>> 0);
}

/** The 128 fixed slot seeds: lowbias32 of a Weyl sequence (step 0x9E3779B9, the golden ratio), see the header. */
export const SEEDS: Uint32Array = (() => {
  const seeds = new Uint32Array(SIGNATURE_SLOTS);
  let state = 0x9e3779b9;
  for (let i = 0; i < SIGNATURE_SLOTS; i++) {
    state = (state + 0x9e3779b9) >>> 0;
    let z = state;
    z = mul32(z ^ (z >>> 16), 0x21f0aaad);
    z = mul32(z ^ (z >>> 15), 0x735a2d97);
    seeds[i] = (z ^ (z >>> 15)) >>> 0;
  }
  return seeds;
})();

// ---------------------------------------------------------------------------------------------------------------
// Normalisation and shingles.

/** Removed: apostrophes, and format characters (soft hyphen, zero-width joiners, BOM) which sit inside words. */
const REMOVED = /['\u2019\u2018\u02bc`\u00b4\p{Cf}]/gu;
const SEPARATORS = /[\p{P}\p{S}\p{Z}\p{Cc}\s]+/gu;

/** NFKC, case folding, apostrophes and format characters removed, punctuation/symbols/whitespace runs → one space, trimmed. */
export function normaliseText(text: string): string {
  return text
    .normalize('NFKC')
    .toLowerCase()
    .replace(/ß/gu, 'ss')
    .replace(/ς/gu, 'σ')
    .replace(/\u200b/gu, ' ')
    .replace(REMOVED, '')
    .replace(SEPARATORS, ' ')
    .trim();
}

/** The distinct word k-grams of normalised text (a text of fewer than k words yields itself as one shingle). */
export function wordShingles(normalised: string, k = SHINGLE_WORDS): Set<string> {
  const words = normalised.length === 0 ? [] : normalised.split(' ');
  const out = new Set<string>();
  if (words.length === 0) return out;
  if (words.length < k) {
    out.add(words.join(' '));
    return out;
  }
  for (let i = 0; i + k <= words.length; i++) out.add(words.slice(i, i + k).join(' '));
  return out;
}

/** The distinct character k-grams (code points) of normalised text; kept for measuring the alternative. */
export function charShingles(normalised: string, k: number): Set<string> {
  const cps = Array.from(normalised);
  const out = new Set<string>();
  for (let i = 0; i + k <= cps.length; i++) out.add(cps.slice(i, i + k).join(''));
  if (out.size === 0 && cps.length > 0) out.add(normalised);
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// MinHash and LSH.

const utf8 = new TextEncoder();

/** The 128-slot MinHash signature of a set of shingles (all slots 0xffffffff for the empty set). */
export function minhash(shingles: Iterable<string>): Uint32Array {
  const sig = new Uint32Array(SIGNATURE_SLOTS).fill(0xffffffff);
  for (const s of shingles) {
    const h = murmur3(utf8.encode(s));
    for (let i = 0; i < SIGNATURE_SLOTS; i++) {
      const v = fmix32((h ^ SEEDS[i]!) >>> 0);
      if (v < sig[i]!) sig[i] = v;
    }
  }
  return sig;
}

/** Fraction of equal slots: an estimate of the Jaccard index of the two shingle sets. */
export function estimateSimilarity(a: Uint32Array, b: Uint32Array): number {
  if (a.length !== b.length || a.length === 0) throw new RangeError('signatures of different lengths');
  let equal = 0;
  for (let i = 0; i < a.length; i++) if (a[i] === b[i]) equal++;
  return equal / a.length;
}

const TWO_32 = 4294967296;

/** The 64 band keys: band b's 2 slots hashed (murmur3 block mixing, seeded by b, finalised) into b·2³² + hash. */
export function lshBands(signature: Uint32Array): number[] {
  if (signature.length !== SIGNATURE_SLOTS) throw new RangeError(`a signature has ${SIGNATURE_SLOTS} slots`);
  const keys: number[] = [];
  for (let b = 0; b < LSH_BANDS; b++) {
    let h = b >>> 0;
    for (let r = 0; r < LSH_ROWS; r++) h = mixH(h, signature[b * LSH_ROWS + r]!);
    keys.push(b * TWO_32 + fmix32((h ^ (LSH_ROWS * 4)) >>> 0));
  }
  return keys;
}

/** True when the two band-key lists share a key (the index's candidate condition). */
export function sharesBand(a: readonly number[], b: readonly number[]): boolean {
  const set = new Set(a);
  return b.some((k) => set.has(k));
}

/** 1024 lowercase hex digits, slot by slot, each big-endian. */
export function signatureToHex(signature: Uint32Array): string {
  let hex = '';
  for (let i = 0; i < signature.length; i++) hex += signature[i]!.toString(16).padStart(8, '0');
  return hex;
}

export function signatureFromHex(hex: string): Uint32Array {
  if (hex.length !== SIGNATURE_HEX_DIGITS || !/^[0-9a-fA-F]+$/.test(hex))
    throw new TextFingerprintError(
      'invalid_value',
      `a ${TEXT_ALG} binding value is ${SIGNATURE_HEX_DIGITS} hex digits`,
    );
  const sig = new Uint32Array(SIGNATURE_SLOTS);
  for (let i = 0; i < SIGNATURE_SLOTS; i++) sig[i] = parseInt(hex.slice(i * 8, i * 8 + 8), 16) >>> 0;
  return sig;
}

/** Fingerprints a text; throws `TextFingerprintError('too_short')` below `MIN_TEXT_CHARS` / `MIN_TEXT_SHINGLES`. */
export function fingerprintText(text: string): TextFingerprint {
  const normalised = normaliseText(text);
  if (normalised.length < MIN_TEXT_CHARS) {
    throw new TextFingerprintError(
      'too_short',
      `text too short to fingerprint: ${normalised.length} characters after normalisation, at least ${MIN_TEXT_CHARS} needed`,
    );
  }
  const shingles = wordShingles(normalised);
  if (shingles.size < MIN_TEXT_SHINGLES) {
    throw new TextFingerprintError(
      'too_short',
      `text too short to fingerprint: ${shingles.size} distinct word ${SHINGLE_WORDS}-grams, at least ${MIN_TEXT_SHINGLES} needed`,
    );
  }
  const signature = minhash(shingles);
  return { alg: TEXT_ALG, signature, bands: lshBands(signature) };
}
