import { describe, expect, it } from '@jest/globals';
import { isId, newApiKey, newId, newWebhookSecret, parseApiKey } from '../src/index.js';

const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
const crockford = (c: string) => CROCKFORD.indexOf(c).toString(2).padStart(5, '0');

describe('ids', () => {
  it('prefixes ULIDs', () => {
    const a = newId('asset');
    expect(a).toMatch(/^a_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(isId('asset', a)).toBe(true);
    expect(isId('tenant', a)).toBe(false);
  });

  it('draws fresh randomness for every id, so one id does not give away the next', () => {
    // Minted back to back, most share their millisecond: a monotonic generator would make each the previous + 1.
    const ids = Array.from({ length: 2000 }, () => newId('asset').slice(2));
    const random = (id: string) => BigInt(`0b${[...id.slice(10)].map(crockford).join('')}`);
    let successors = 0;
    let sameMillisecond = 0;
    for (let i = 1; i < ids.length; i += 1) {
      if (ids[i]!.slice(0, 10) !== ids[i - 1]!.slice(0, 10)) continue;
      sameMillisecond += 1;
      const gap = random(ids[i]!) - random(ids[i - 1]!);
      if (gap > 0n && gap < 1n << 16n) successors += 1;
    }
    expect(sameMillisecond).toBeGreaterThan(100);
    expect(successors).toBe(0);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('stamps the minting millisecond and spreads the 80 random bits evenly over every bit position', () => {
    const before = Date.now();
    const ids = Array.from({ length: 4000 }, () => newId('asset').slice(2));
    const after = Date.now();
    const time = (id: string) => Number(BigInt(`0b${[...id.slice(0, 10)].map(crockford).join('')}`));
    expect(ids.every((id) => time(id) >= before && time(id) <= after)).toBe(true);
    // Each of the 80 bits is set in about half the ids (a biased or stuck bit is guessable): 4000 draws keep a fair
    // bit within 1680–2320 with overwhelming probability (10 standard deviations).
    const ones = new Array<number>(80).fill(0);
    for (const id of ids) [...[...id.slice(10)].map(crockford).join('')].forEach((bit, i) => (ones[i]! += Number(bit)));
    expect(Math.min(...ones)).toBeGreaterThan(1680);
    expect(Math.max(...ones)).toBeLessThan(2320);
  });

  it('round-trips an API key to its key id and secret', () => {
    const { keyId, apiKey, secret } = newApiKey();
    expect(apiKey.startsWith('cairn_sk_key_')).toBe(true);
    expect(parseApiKey(apiKey)).toEqual({ keyId, secret });
  });

  it('refuses keys of the wrong shape', () => {
    const { apiKey } = newApiKey();
    expect(parseApiKey(apiKey.slice(0, -1))).toBeNull();
    expect(parseApiKey('Bearer ' + apiKey)).toBeNull();
    expect(parseApiKey('cairn_sk_key_short_secret')).toBeNull();
  });

  it('makes whsec_ secrets with 32 bytes of entropy', () => {
    const s = newWebhookSecret();
    expect(s).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    expect(newWebhookSecret()).not.toBe(s);
  });
});
