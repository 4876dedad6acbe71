import 'reflect-metadata';
import { describe, expect, it } from '@jest/globals';
import { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';
import { ReadingMemo } from '../src/app/verify/reading-memo.js';
import type { ManifestReading, ReadManifestInput } from '../src/domain/c2pa/types.js';
import { trustedReading } from './support/readings.js';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** A certificate (PEM) valid from `notBefore` to `notAfter`: the memo reads only the chain's validity. */
async function certificate(notBefore: Date, notAfter: Date): Promise<string> {
  const algorithm = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
  const keys = await webcrypto.subtle.generateKey(algorithm, true, ['sign', 'verify']);
  const cert = await x509.X509CertificateGenerator.createSelfSigned(
    { serialNumber: '01', name: 'CN=Memo Test', notBefore, notAfter, keys, signingAlgorithm: algorithm },
    webcrypto,
  );
  return cert.toString('pem');
}

/** A chain (leaf, CA) valid from yesterday; the leaf until `leafNotAfter` (30 days by default). */
async function chainOf(leafNotAfter = new Date(Date.now() + 30 * DAY)): Promise<string[]> {
  const yesterday = new Date(Date.now() - DAY);
  return [await certificate(yesterday, leafNotAfter), await certificate(yesterday, new Date(Date.now() + 365 * DAY))];
}

function input(overrides: Partial<ReadManifestInput> = {}): ReadManifestInput {
  return {
    asset: Buffer.from('signed file bytes'),
    mimeType: 'image/jpeg',
    trustAnchorsPem: ['root A', 'root B'],
    allowRemoteFetch: false,
    ...overrides,
  };
}

/** A valid, trusted reading under a chain (leaf, CA), as c2pa-rs reports a Cairn-signed file. */
function reading(chain: string[], overrides: Partial<ManifestReading> = {}): ManifestReading {
  return trustedReading({
    signer: { certChainPem: chain },
    claims: { aiGenerated: true, aiAssisted: false },
    manifestStore: Buffer.alloc(1000),
    ...overrides,
  });
}

describe('ReadingMemo', () => {
  it('keys a reading by every input c2pa-rs reads: the bytes, their type, the sidecar and the trust anchors', () => {
    const base = ReadingMemo.keyOf(input());
    expect(ReadingMemo.keyOf(input())).toBe(base);
    expect(ReadingMemo.keyOf(input({ asset: Buffer.from('signed file bytez') }))).not.toBe(base);
    expect(ReadingMemo.keyOf(input({ mimeType: 'image/png' }))).not.toBe(base);
    expect(ReadingMemo.keyOf(input({ sidecar: Buffer.from('store') }))).not.toBe(base);
    // A trust list with one anchor more, or fewer, reads again.
    expect(ReadingMemo.keyOf(input({ trustAnchorsPem: ['root A'] }))).not.toBe(base);
    expect(ReadingMemo.keyOf(input({ trustAnchorsPem: ['root A', 'root B', 'root C'] }))).not.toBe(base);
    expect(ReadingMemo.keyOf(input({ trustAnchorsPem: ['root Aroot B'] }))).not.toBe(base);
  });

  it('answers a kept reading until its freshness ends', async () => {
    const memo = new ReadingMemo(1 << 20, 10 * 60_000);
    const now = Date.now();
    const kept = reading(await chainOf());
    memo.set('k', kept, now);
    expect(memo.get('k', now + 60_000)).toBe(kept);
    expect(memo.get('k', now + 10 * 60_000)).toBeUndefined();
  });

  it('answers no reading past the first expiry in its chain', async () => {
    const now = Date.now();
    const memo = new ReadingMemo(1 << 20, 24 * HOUR);
    memo.set('k', reading(await chainOf(new Date(now + HOUR))), now);
    expect(memo.get('k', now + HOUR - 1000)).toBeDefined();
    expect(memo.get('k', now + HOUR + 1000)).toBeUndefined();
  });

  it('keeps no reading whose answer depends on more than its inputs', async () => {
    const now = Date.now();
    const notYetValid = await certificate(new Date(now + HOUR), new Date(now + 2 * HOUR));
    const memo = new ReadingMemo(1 << 20, 24 * HOUR);
    const chain = await chainOf();
    const refused: Array<[string, Parameters<ReadingMemo['set']>[1]]> = [
      ['expired', reading(chain, { certificateExpired: true })],
      ['stapled OCSP', reading(chain, { ocspStatus: 'good' })],
      ['no chain', reading([])],
      ['not yet valid', reading([notYetValid, chain[1]!])],
      ['no manifest', { kind: 'none' }],
    ];
    for (const [key, what] of refused) memo.set(key, what, now);
    for (const [key] of refused) expect(memo.get(key, now)).toBeUndefined();
  });

  it('keeps readings within its memory, dropping the least recently used first', async () => {
    const chain = await chainOf();
    const one = reading(chain);
    const size = 4096 + 1000 + chain.reduce((sum, pem) => sum + pem.length, 0);
    const memo = new ReadingMemo(3 * size, HOUR);
    const now = Date.now();
    for (const key of ['a', 'b', 'c']) memo.set(key, reading(chain), now);
    expect(memo.get('a', now)).toBeDefined(); // now the youngest
    memo.set('d', one, now);
    expect(memo.get('b', now)).toBeUndefined();
    for (const key of ['a', 'c', 'd']) expect(memo.get(key, now)).toBeDefined();
  });
});
