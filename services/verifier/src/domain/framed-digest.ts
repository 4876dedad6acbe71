import { createHash } from 'node:crypto';

/**
 * SHA-256 (hex) over `parts`, each one prefixed with its byte length, so no two different sequences of parts hash
 * alike however their bytes run together: the key of a memo over lists a file or a tenant chooses.
 */
export function framedDigest(parts: Iterable<string | Uint8Array>): string {
  const hash = createHash('sha256');
  const length = Buffer.alloc(8);
  for (const part of parts) {
    const bytes = typeof part === 'string' ? Buffer.from(part) : part;
    length.writeBigUInt64BE(BigInt(bytes.length));
    hash.update(length).update(bytes);
  }
  return hash.digest('hex');
}
