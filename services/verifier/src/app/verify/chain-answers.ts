import { ByteBoundedLru } from '@cairn/runtime';
import { chainsToOneOf } from '../../domain/cairn-link.js';
import { framedDigest } from '../../domain/framed-digest.js';

/** What one answer keeps alive: its key (64 hex characters, two bytes each) and the Map entry around it. */
const ANSWER_BYTES = 64 * 2 + 64;

/**
 * Whether a certificate chain leads to one of these roots (domain/cairn-link.ts), remembered: the answer is a
 * function of the certificates alone (no clock), and every verify of a Cairn file asks it about the same few.
 * Bounded to 256 answers (least recently used out): a file names whatever chain it likes. Per process.
 */
const answers = new ByteBoundedLru<boolean>(256 * ANSWER_BYTES);

export function chainLeadsToOneOf(chainPem: readonly string[], rootsPem: readonly string[]): boolean {
  if (chainPem.length === 0 || rootsPem.length === 0) return false;
  const key = chainKey(chainPem, rootsPem);
  const known = answers.get(key);
  if (known !== undefined) return known;
  const answer = chainsToOneOf(chainPem, rootsPem);
  answers.set(key, answer, ANSWER_BYTES);
  return answer;
}

function chainKey(chainPem: readonly string[], rootsPem: readonly string[]): string {
  // The chain's length first, so no certificate can move from one list to the other under the same key.
  return framedDigest([String(chainPem.length), ...chainPem, ...rootsPem]);
}
