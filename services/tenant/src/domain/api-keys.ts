import { createHash, timingSafeEqual } from 'node:crypto';

export function hashApiKey(apiKey: string): string {
  return createHash('sha256').update(apiKey, 'utf8').digest('hex');
}

/** Constant-time: the comparison's duration does not depend on where the hashes differ. */
export function apiKeyMatches(apiKey: string, storedHash: string): boolean {
  const presented = Buffer.from(hashApiKey(apiKey), 'hex');
  const stored = Buffer.from(storedHash, 'hex');
  return presented.length === stored.length && timingSafeEqual(presented, stored);
}
