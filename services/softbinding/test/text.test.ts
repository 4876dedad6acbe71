import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from '@jest/globals';
import {
  estimateSimilarity,
  fingerprintText,
  LSH_BANDS,
  MIN_TEXT_CHARS,
  normaliseText,
  SIGNATURE_HEX_DIGITS,
  SIGNATURE_SLOTS,
  sharesBand,
  signatureFromHex,
  signatureToHex,
  TEXT_ALG,
  TEXT_MATCH_THRESHOLD,
  TextFingerprintError,
  type TextFingerprint,
} from '../src/domain/text.js';

const DIR = new URL('./fixtures/text/', import.meta.url).pathname;
const PASSAGES = readdirSync(DIR)
  .filter((f) => f.endsWith('.txt'))
  .sort()
  .map((f) => ({ name: f.replace(/\.txt$/, ''), text: readFileSync(`${DIR}${f}`, 'utf8') }));

/** mulberry32: a seeded PRNG so the edited words are the same on every run. */
function prng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const REPLACEMENTS = [
  'river',
  'lantern',
  'quietly',
  'seven',
  'harbour',
  'copper',
  'gentle',
  'window',
  'autumn',
  'marble',
  'thunder',
  'basket',
  'velvet',
  'orchard',
  'meadow',
  'silver',
];

/** Replaces `count` distinct words, chosen by the seeded PRNG, with unrelated words (whitespace kept). */
function replaceWords(text: string, count: number, seed: number): string {
  const parts = text.split(/(\s+)/);
  const wordIndexes: number[] = [];
  for (let i = 0; i < parts.length; i += 2) if (parts[i]!.length > 0) wordIndexes.push(i);
  const next = prng(seed);
  const chosen = new Set<number>();
  while (chosen.size < count) chosen.add(wordIndexes[Math.floor(next() * wordIndexes.length)]!);
  let r = 0;
  for (const i of [...chosen].sort((a, b) => a - b)) parts[i] = REPLACEMENTS[r++ % REPLACEMENTS.length]!;
  return parts.join('');
}

const words = (text: string) => text.trim().split(/\s+/);
const sentences = (text: string) =>
  text
    .replace(/\s+/g, ' ')
    .trim()
    .match(/[^.!?]+[.!?]+["')]*|[^.!?]+$/g)!
    .map((s) => s.trim());

/** Near-duplicate transforms of a passage (the seed varies the edited words per passage). */
const TRANSFORMS: Record<string, (text: string, seed: number) => string> = {
  're-wrapped and re-spaced': (t) =>
    words(t)
      .map((w, i) => (i > 0 && i % 9 === 0 ? `\r\n\t${w}` : i % 4 === 0 ? `  ${w}` : ` ${w}`))
      .join('')
      .trim(),
  'upper case': (t) => t.toUpperCase(),
  'punctuation changed': (t) =>
    t
      .replace(/--/g, '\u2014')
      .replace(/"([^"]*)"/g, '\u201c$1\u201d')
      .replace(/'/g, '\u2019')
      .replace(/,/g, '')
      .replace(/;/g, ',')
      .replace(/\. /g, '! '),
  '5 words substituted': (t, seed) => replaceWords(t, 5, seed),
  'longest sentence deleted': (t) => {
    const s = sentences(t);
    const longest = s.reduce((m, x, i) => (x.length > s[m]!.length ? i : m), 0);
    return s.filter((_, i) => i !== longest).join(' ');
  },
  'sentence appended': (t) =>
    `${t}\n\nThis passage was reproduced from a public-domain edition and shared for discussion by the reading group.`,
  '10% of words edited': (t, seed) => replaceWords(t, Math.round(words(t).length * 0.1), seed),
  'truncated to 70%': (t) => {
    const w = words(t);
    return w.slice(0, Math.round(w.length * 0.7)).join(' ');
  },
};

const summary = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const f = (x: number) => x.toFixed(3);
  return `min ${f(s[0]!)} / median ${f(s[s.length >> 1]!)} / max ${f(s[s.length - 1]!)} (n=${s.length})`;
};

describe('text fingerprint cairn.minhash.v1', () => {
  it('has a dozen or more public-domain passages of 150–400 words', () => {
    expect(PASSAGES.length).toBeGreaterThanOrEqual(12);
    for (const p of PASSAGES) {
      expect(words(p.text).length).toBeGreaterThanOrEqual(150);
      expect(words(p.text).length).toBeLessThanOrEqual(400);
    }
  });

  it('normalises Unicode compatibility forms, case, apostrophes, punctuation and whitespace', () => {
    expect(normaliseText('  The ﬁrst\u00a0CAFÉ — isn’t   it?\n\tStraße…  ')).toBe('the first café isnt it strasse');
    expect(normaliseText("don't")).toBe(normaliseText('DON\u2019T'));
    expect(normaliseText('ＦＵＬＬ\u3000width')).toBe('full width');
    expect(normaliseText('hyphen\u00adation zero\u200bwidth')).toBe('hyphenation zero width');
  });

  it('is a deterministic 128-slot signature with 64 band keys (pinned values: same on every machine)', () => {
    const gettysburg = PASSAGES.find((p) => p.name === 'gettysburg')!.text;
    const a = fingerprintText(gettysburg);
    const b = fingerprintText(gettysburg);
    expect(a.alg).toBe(TEXT_ALG);
    expect(a.signature).toHaveLength(SIGNATURE_SLOTS);
    expect(a.bands).toHaveLength(LSH_BANDS);
    expect(estimateSimilarity(a.signature, b.signature)).toBe(1);
    expect(a.bands).toEqual(b.bands);
    expect(signatureToHex(a.signature).slice(0, 32)).toBe('03bbc5c7000985c6011459a600242c43');
    expect(a.bands.slice(0, 3)).toEqual([1486054225, 7415828605, 9653020362]);
    a.bands.forEach((key, band) => {
      expect(Number.isSafeInteger(key)).toBe(true);
      expect(Math.floor(key / 2 ** 32)).toBe(band);
    });
  });

  it('round-trips the binding value through 1024 hex digits and rejects malformed values', () => {
    for (const p of PASSAGES) {
      const { signature } = fingerprintText(p.text);
      const hex = signatureToHex(signature);
      expect(hex).toMatch(/^[0-9a-f]+$/);
      expect(hex).toHaveLength(SIGNATURE_HEX_DIGITS);
      expect(signatureFromHex(hex)).toEqual(signature);
      expect(signatureFromHex(hex.toUpperCase())).toEqual(signature);
    }
    expect(() => signatureFromHex('abc')).toThrow(TextFingerprintError);
    expect(() => signatureFromHex('g'.repeat(SIGNATURE_HEX_DIGITS))).toThrow(TextFingerprintError);
  });

  it('refuses text too short to fingerprint with a typed error', () => {
    const short = 'Four score and seven years ago our fathers brought forth on this continent, a new nation.';
    expect(() => fingerprintText(short)).toThrow(TextFingerprintError);
    expect(() => fingerprintText('')).toThrow(TextFingerprintError);
    // Long enough in characters but almost no distinct word trigrams.
    expect(() => fingerprintText('buffalo '.repeat(60))).toThrow(TextFingerprintError);
    try {
      fingerprintText(short);
    } catch (error) {
      expect(error).toBeInstanceOf(TextFingerprintError);
      expect((error as TextFingerprintError).code).toBe('too_short');
      expect((error as TextFingerprintError).message).toMatch(new RegExp(`at least ${MIN_TEXT_CHARS}`));
    }
  });

  it('separates near-duplicates from different passages, and LSH makes every near-duplicate a candidate (distributions printed for the README)', () => {
    const originals = new Map<string, TextFingerprint>(PASSAGES.map((p) => [p.name, fingerprintText(p.text)]));
    const lines: string[] = [];
    const nearDuplicates: Array<{ label: string; similarity: number; candidate: boolean }> = [];
    for (const [transform, apply] of Object.entries(TRANSFORMS)) {
      const sims: number[] = [];
      PASSAGES.forEach((p, i) => {
        const original = originals.get(p.name)!;
        const copy = fingerprintText(apply(p.text, i + 1));
        const similarity = estimateSimilarity(original.signature, copy.signature);
        sims.push(similarity);
        nearDuplicates.push({
          label: `${transform} / ${p.name}`,
          similarity,
          candidate: sharesBand(original.bands, copy.bands),
        });
      });
      lines.push(`${transform}: ${summary(sims)}`);
    }
    const different: Array<{ label: string; similarity: number; candidate: boolean }> = [];
    for (let i = 0; i < PASSAGES.length; i++) {
      for (let j = i + 1; j < PASSAGES.length; j++) {
        const a = originals.get(PASSAGES[i]!.name)!;
        const b = originals.get(PASSAGES[j]!.name)!;
        different.push({
          label: `${PASSAGES[i]!.name} vs ${PASSAGES[j]!.name}`,
          similarity: estimateSimilarity(a.signature, b.signature),
          candidate: sharesBand(a.bands, b.bands),
        });
      }
    }
    lines.push(
      `all near-duplicates: ${summary(nearDuplicates.map((d) => d.similarity))}; LSH candidates ${nearDuplicates.filter((d) => d.candidate).length}/${nearDuplicates.length}`,
    );
    lines.push(
      `different passages (${PASSAGES.length} passages, unordered pairs): ${summary(different.map((d) => d.similarity))}; LSH candidates ${different.filter((d) => d.candidate).length}/${different.length}`,
    );
    const hardest = [...nearDuplicates].sort((a, b) => a.similarity - b.similarity).slice(0, 3);
    const closest = [...different].sort((a, b) => b.similarity - a.similarity).slice(0, 3);
    lines.push(`lowest near-duplicates: ${hardest.map((d) => `${d.label} ${d.similarity.toFixed(3)}`).join('; ')}`);
    lines.push(`highest different pairs: ${closest.map((d) => `${d.label} ${d.similarity.toFixed(3)}`).join('; ')}`);
    lines.push(`threshold ${TEXT_MATCH_THRESHOLD}`);
    process.stdout.write(`${lines.join('\n')}\n`);

    expect(nearDuplicates.filter((d) => d.similarity < TEXT_MATCH_THRESHOLD).map((d) => d.label)).toEqual([]);
    expect(different.filter((d) => d.similarity >= TEXT_MATCH_THRESHOLD).map((d) => d.label)).toEqual([]);
    expect(nearDuplicates.filter((d) => !d.candidate).map((d) => d.label)).toEqual([]);
    // Unchanged apart from spacing, case and punctuation: the same shingles, so the same signature.
    for (const d of nearDuplicates.filter((x) => /^(re-wrapped|upper case|punctuation)/.test(x.label)))
      expect(d.similarity).toBe(1);
  });
});
