import { parseSignMetadata as parseShared } from '@cairn/errors';

/**
 * Validates sign metadata with the one schema the gateway also applies at the door (packages/errors): only the
 * spec's fields, never prompt text. The signer checks again because it must never persist or sign what it
 * would refuse, whoever calls it.
 */
export function parseSignMetadata(raw: Record<string, string>): ReturnType<typeof parseShared> {
  return parseShared(raw);
}
