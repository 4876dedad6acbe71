/**
 * Which trust list vouched for a signer. A verify runs under several lists at once (Cairn's root, the official C2PA
 * Trust List and its TSA list, the frozen interim list, configured anchors; or a tenant's own list): c2pa-rs says only
 * whether the chain ended in one of their anchors, and a report must name the list, and the copy of it, that did.
 */
export type TrustListKind = 'cairn' | 'c2pa' | 'c2pa_tsa' | 'interim' | 'configured' | 'custom';

/** A list as it was loaded: what it is, where it came from, and which snapshot of it. */
export interface TrustListIdentity {
  list: TrustListKind;
  name: string;
  /** Where it was read from: "shipped with Cairn", a file, a URL, "signer" (Cairn's root), "tenant" (its own list). */
  source: string;
  /** ListIssueDateTime of the published list (ISO 8601), when the list says it. */
  issuedAt?: string;
  nextUpdate?: string;
  /** SHA-256 (hex) of the list as loaded: the text of a published list, the certificates of the others. */
  sha256: string;
  certificates: number;
  /** When this copy was read (ISO 8601). */
  loadedAt?: string;
  /** No longer updated: the interim list was frozen when the official C2PA Trust List replaced it. */
  frozen?: boolean;
}

export interface ListInForce {
  identity: TrustListIdentity;
  pems: readonly string[];
}

/**
 * Lists asked in this order: the official and operator-chosen ones first, the frozen interim list last, so a
 * credential on both is told trusted by the official list, and one on the interim list only is told apart.
 */
const PRECEDENCE: readonly TrustListKind[] = ['custom', 'cairn', 'c2pa', 'configured', 'c2pa_tsa', 'interim'];

/** The first list (by PRECEDENCE) one of whose anchors the chain leads to; undefined when none does. */
export function listThatTrusts(
  lists: readonly ListInForce[],
  leadsTo: (roots: readonly string[]) => boolean,
): TrustListIdentity | undefined {
  const ordered = [...lists].sort((a, b) => PRECEDENCE.indexOf(a.identity.list) - PRECEDENCE.indexOf(b.identity.list));
  return ordered.find((l) => l.pems.length > 0 && leadsTo(l.pems))?.identity;
}
