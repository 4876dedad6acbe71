import { createHash } from 'node:crypto';
import { describe, expect, it } from '@jest/globals';
import {
  auditPath,
  EMPTY_TREE_HASH,
  leafHash,
  merkleRoot,
  nodeHash,
  treeLevels,
  verifyInclusion,
} from '../src/index.js';

/** RFC 6962 2.1 written literally (recursive split at the largest power of two below n): the reference. */
function referenceRoot(data: Buffer[]): Buffer {
  if (data.length === 0) return createHash('sha256').digest();
  if (data.length === 1) return createHash('sha256').update(Buffer.of(0)).update(data[0]!).digest();
  let k = 1;
  while (k * 2 < data.length) k *= 2;
  return createHash('sha256')
    .update(Buffer.of(1))
    .update(referenceRoot(data.slice(0, k)))
    .update(referenceRoot(data.slice(k)))
    .digest();
}

/** RFC 6962 2.1.1 PATH(m, D[n]) written literally. */
function referencePath(m: number, data: Buffer[]): Buffer[] {
  if (data.length <= 1) return [];
  let k = 1;
  while (k * 2 < data.length) k *= 2;
  return m < k
    ? [...referencePath(m, data.slice(0, k)), referenceRoot(data.slice(k))]
    : [...referencePath(m - k, data.slice(k)), referenceRoot(data.slice(0, k))];
}

// The eight inputs of the certificate-transparency reference tests (merkle_tree_test.cc).
const CT_INPUTS = [
  '',
  '00',
  '10',
  '2021',
  '3031',
  '40414243',
  '5051525354555657',
  '606162636465666768696a6b6c6d6e6f',
].map((h) => Buffer.from(h, 'hex'));
const CT_ROOTS = [
  '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
  'fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125',
  'aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77',
  'd37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7',
  '4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4',
  '76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef',
  'ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c',
  '5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328',
];

const digests = (n: number) =>
  Array.from({ length: n }, (_, i) => createHash('sha256').update(`manifest ${i}`).digest());

describe('RFC 6962 Merkle tree', () => {
  it('hashes leaves and nodes with the 0x00 / 0x01 domain separation', () => {
    expect(leafHash(Buffer.alloc(0)).toString('hex')).toBe(
      '6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d',
    );
    const a = leafHash(Buffer.from('a'));
    const b = leafHash(Buffer.from('b'));
    expect(nodeHash(a, b)).toEqual(
      createHash('sha256')
        .update(Buffer.concat([Buffer.of(1), a, b]))
        .digest(),
    );
    expect(merkleRoot([]).toString('hex')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(merkleRoot([])).toEqual(EMPTY_TREE_HASH);
  });

  it('matches the certificate-transparency reference roots for 1..8 leaves', () => {
    for (let n = 1; n <= 8; n++) {
      const root = merkleRoot(CT_INPUTS.slice(0, n).map(leafHash));
      expect(root.toString('hex')).toBe(CT_ROOTS[n - 1]);
      expect(root).toEqual(referenceRoot(CT_INPUTS.slice(0, n)));
    }
  });

  it('builds the same root and audit paths as the recursive definition for every size up to 70', () => {
    for (let n = 1; n <= 70; n++) {
      const data = digests(n);
      const levels = treeLevels(data.map(leafHash));
      const root = referenceRoot(data);
      expect(levels[levels.length - 1]![0]).toEqual(root);
      for (let m = 0; m < n; m++) {
        const path = auditPath(levels, m);
        expect(path).toEqual(referencePath(m, data));
        expect(verifyInclusion(leafHash(data[m]!), m, n, path, root)).toBe(true);
      }
    }
  });

  it('rejects a non-member, an altered digest, a wrong index or size, and a truncated or padded path', () => {
    for (const n of [1, 2, 3, 5, 7, 8, 9, 13, 100]) {
      const data = digests(n);
      const levels = treeLevels(data.map(leafHash));
      const root = levels[levels.length - 1]![0]!;
      const m = n - 1;
      const path = auditPath(levels, m);
      const altered = Buffer.from(data[m]!);
      altered[0]! ^= 1;
      expect(verifyInclusion(leafHash(altered), m, n, path, root)).toBe(false);
      expect(verifyInclusion(leafHash(createHash('sha256').update('not a member').digest()), m, n, path, root)).toBe(
        false,
      );
      // The raw digest (no 0x00 prefix) must not pass as a leaf: no second-preimage via interior nodes.
      expect(verifyInclusion(data[m]!, m, n, path, root)).toBe(false);
      if (n > 1) {
        expect(verifyInclusion(leafHash(data[m]!), m - 1, n, path, root)).toBe(false);
        expect(verifyInclusion(leafHash(data[m]!), m, n + 1, path, root)).toBe(false);
        expect(verifyInclusion(leafHash(data[m]!), m, n, path.slice(1), root)).toBe(false);
      }
      expect(verifyInclusion(leafHash(data[m]!), m, n, [...path, root], root)).toBe(false);
      expect(verifyInclusion(leafHash(data[m]!), n, n, path, root)).toBe(false);
    }
  });

  it('proves membership in a 100,000-leaf tree with a 17-hash path', () => {
    const data = digests(100_000);
    const levels = treeLevels(data.map(leafHash));
    const root = levels[levels.length - 1]![0]!;
    for (const m of [0, 65_535, 65_536, 99_999]) {
      const path = auditPath(levels, m);
      expect(path.length).toBeLessThanOrEqual(17);
      expect(verifyInclusion(leafHash(data[m]!), m, 100_000, path, root)).toBe(true);
    }
  });
});
