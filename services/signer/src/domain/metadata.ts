import { parseSignMetadata as parseShared } from '@cairn/errors';

/**
 * Validates sign metadata with the one schema the gateway also applies at the door (packages/errors): only the
 * spec's fields, never prompt text. The signer checks again because it must never persist or sign what it
 * would refuse, whoever calls it.
 */
export function parseSignMetadata(raw: Record<string, string>): ReturnType<typeof parseShared> {
  return parseShared(raw);
}

/** The sign metadata of the API (all optional strings). Never carries prompt text, only its hash. */
export interface GenerationMetadata {
  generator?: string;
  model?: string;
  /** `sha256:<64 hex>` of the prompt. */
  prompt_hash?: string;
  /** ISO 8601 UTC. */
  created_at?: string;
  creator?: string;
  legal_entity?: string;
  legal_case_ref?: string;
}
