import { createHash } from 'node:crypto';

/**
 * RFC 6962 (Certificate Transparency) Merkle trees, section 2.1; the same as RFC 9162 section 2.1:
 *   leaf hash = SHA-256(0x00 || data), node hash = SHA-256(0x01 || left || right),
 *   MTH of n > 1 leaves = node(MTH(first k), MTH(rest)) with k the largest power of two below n,
 *   MTH of no leaves = SHA-256("").
 * Built bottom-up: pair neighbours level by level; an unpaired last node is promoted unchanged (never
 * duplicated), which yields exactly the recursive definition. Pure: no I/O; the anchor service builds its trees
 * and proofs with it, and tools/anchor/verify-proof.ts checks a proof with the same code, importing no service.
 */

const sha256 = (...parts: Uint8Array[]): Buffer => {
  const hash = createHash('sha256');
  for (const part of parts) hash.update(part);
  return hash.digest();
};

const LEAF_PREFIX = Uint8Array.of(0x00);
const NODE_PREFIX = Uint8Array.of(0x01);

export const leafHash = (data: Uint8Array): Buffer => sha256(LEAF_PREFIX, data);
export const nodeHash = (left: Uint8Array, right: Uint8Array): Buffer => sha256(NODE_PREFIX, left, right);
export const EMPTY_TREE_HASH = sha256();

/** All levels, leaves (hashed) first, root level last. */
export function treeLevels(leafHashes: ReadonlyArray<Uint8Array>): Buffer[][] {
  const levels: Buffer[][] = [leafHashes.map((h) => Buffer.from(h))];
  let level = levels[0]!;
  while (level.length > 1) {
    const next: Buffer[] = [];
    for (let i = 0; i < level.length; i += 2)
      next.push(i + 1 < level.length ? nodeHash(level[i]!, level[i + 1]!) : level[i]!);
    levels.push(next);
    level = next;
  }
  return levels;
}

export function rootOf(levels: ReadonlyArray<ReadonlyArray<Buffer>>): Buffer {
  const top = levels[levels.length - 1]!;
  return top.length === 0 ? EMPTY_TREE_HASH : top[0]!;
}

export function merkleRoot(leafHashes: ReadonlyArray<Uint8Array>): Buffer {
  return rootOf(treeLevels(leafHashes));
}

/** The audit path of leaf `index` (RFC 6962 2.1.1), bottom-up: the siblings met on the way to the root. */
export function auditPath(levels: ReadonlyArray<ReadonlyArray<Buffer>>, index: number): Buffer[] {
  const size = levels[0]?.length ?? 0;
  if (!Number.isInteger(index) || index < 0 || index >= size)
    throw new RangeError(`leaf index ${index} is outside a tree of ${size}`);
  const path: Buffer[] = [];
  let i = index;
  for (let l = 0; l < levels.length - 1; l++) {
    const level = levels[l]!;
    const sibling = i % 2 === 1 ? i - 1 : i + 1;
    if (sibling < level.length) path.push(level[sibling]!);
    i = Math.floor(i / 2);
  }
  return path;
}

/**
 * Recomputes the root from a leaf hash, its index, the tree size and the audit path (RFC 9162 2.1.3.2);
 * true only when it equals `root` and the path has exactly the expected length.
 */
export function verifyInclusion(
  leaf: Uint8Array,
  index: number,
  treeSize: number,
  path: ReadonlyArray<Uint8Array>,
  root: Uint8Array,
): boolean {
  if (!Number.isInteger(index) || !Number.isInteger(treeSize) || index < 0 || index >= treeSize) return false;
  let fn = index;
  let sn = treeSize - 1;
  let r: Buffer = Buffer.from(leaf);
  for (const p of path) {
    if (sn === 0) return false;
    if (fn % 2 === 1 || fn === sn) {
      r = nodeHash(p, r);
      if (fn % 2 === 0) {
        while (fn % 2 === 0 && fn !== 0) {
          fn = Math.floor(fn / 2);
          sn = Math.floor(sn / 2);
        }
      }
    } else {
      r = nodeHash(r, p);
    }
    fn = Math.floor(fn / 2);
    sn = Math.floor(sn / 2);
  }
  return sn === 0 && r.equals(Buffer.from(root));
}

export const toHex = (bytes: Uint8Array): `0x${string}` => `0x${Buffer.from(bytes).toString('hex')}`;
export function fromHex(hex: string, bytes?: number): Buffer {
  const clean = hex.startsWith('0x') ? hex.slice(2) : hex;
  if (!/^(?:[0-9a-fA-F]{2})*$/.test(clean) || (bytes !== undefined && clean.length !== bytes * 2))
    throw new Error(`not ${bytes ?? 'a'}-byte hex: ${hex}`);
  return Buffer.from(clean, 'hex');
}
