import type { Evidence, SoftMatch } from './evidence.js';

/** The closed set of 16 statuses (docs/decisions/0009-verification-statuses.md). */
export const STATUSES = [
  'verified_manifest_and_watermark_match',
  'verified_manifest',
  'manifest_watermark_conflict',
  'manifest_signer_untrusted',
  'manifest_signer_revoked',
  'manifest_certificate_expired',
  'manifest_tampered',
  'manifest_content_modified',
  'manifest_malformed',
  'manifest_unreachable',
  'anchor_mismatch',
  'watermark_only',
  'watermark_unregistered',
  'fingerprint_match_only',
  'no_provenance',
  'inconclusive',
] as const;

export type Status = (typeof STATUSES)[number];

/** The closed set of warnings a verdict may carry (docs/api.md, "Warnings"). */
export const WARNINGS = [
  'ocsp_unavailable',
  'watermark_unavailable',
  'soft_binding_unavailable',
  'anchor_unavailable',
  'watermark_not_found',
  'watermark_keyless',
  'watermark_content_mismatch',
  'interim_trust_list',
] as const;

export type Warning = (typeof WARNINGS)[number];

/**
 * How strongly each signal, on its own, supports a result: the share of the remaining doubt it removes when
 * it agrees. Confidence combines the signals that agree as independent evidence (noisy-OR):
 * `1 − Π(1 − weight × score)`. Each agreeing signal multiplies the doubt left by the others by `1 − w × s`
 * (≤ 1), so more independent agreeing evidence never lowers confidence, and a signal that did not run, or ran
 * and found nothing, changes nothing: absence of evidence is not evidence against. (A weighted mean, used
 * before, ranked a manifest plus a matching 0.97 watermark below the manifest alone.) Evidence that
 * contradicts the result decides a "weighted, low" status instead, capped at LOW_CONFIDENCE_CAP. The order
 * this gives: manifest (0.9) above a watermark alone (≤ 0.8) above a fingerprint alone (≤ 0.6).
 */
export const SIGNAL_WEIGHTS = { manifest: 0.9, ocsp: 0.5, watermark: 0.8, fingerprint: 0.6, anchor: 0.6 } as const;

/** Statuses marked "weighted, low" in docs/decisions/0009-verification-statuses.md are capped here: evidence exists but something is wrong. */
export const LOW_CONFIDENCE_CAP = 0.35;

type Part = [weight: number, score: number];

/** Noisy-OR over the signals in `parts` (see SIGNAL_WEIGHTS): 0 when nothing supports the result. */
function weighted(parts: Part[]): number {
  const doubt = parts.reduce((left, [w, s]) => left * (1 - Math.min(1, Math.max(0, w * s))), 1);
  return round(1 - doubt);
}

const round = (value: number) => Math.round(Math.min(1, Math.max(0, value)) * 1000) / 1000;

function ocspPart(ocsp: Evidence['ocsp']): Part[] {
  if (ocsp === 'good') return [[SIGNAL_WEIGHTS.ocsp, 1]];
  // "unknown" (the responder does not know the certificate) vouches for nothing, so it adds no confidence.
  return [];
}

function anchorPart(anchor: Evidence['anchor']): Part[] {
  return anchor.ran ? [[SIGNAL_WEIGHTS.anchor, anchor.match ? 1 : 0]] : [];
}

/** A signal service that did not answer: the verdict is inconclusive. */
export type FailedService = 'watermark' | 'soft_binding' | 'anchor';

function failedServices(e: Evidence): FailedService[] {
  const failed: FailedService[] = [];
  if (!e.watermark.ran && e.watermark.reason === 'failed') failed.push('watermark');
  if (!e.fingerprint.ran && e.fingerprint.reason === 'failed') failed.push('soft_binding');
  if (!e.anchor.ran && e.anchor.reason === 'failed') failed.push('anchor');
  return failed;
}

/** What the table decides: the status and its confidence, with the matches and warnings it carries. */
export interface Ruling {
  status: Status;
  confidence: number | null;
  matches: SoftMatch[];
  warnings: Warning[];
  /** `inconclusive`: the signal services that did not answer. */
  failed?: FailedService[];
  /** `manifest_watermark_conflict`: the manifest names another payload, or the mark is another asset's. */
  conflict?: 'payload' | 'asset';
}

/** A ruling of `status` at `confidence`, carrying the table's warnings (shared: later rows may still add to them). */
type Say = (
  status: Status,
  confidence: number | null,
  more?: Pick<Ruling, 'failed' | 'conflict'> & { matches?: SoftMatch[] },
) => Ruling;

/** What every row of the table reads: the evidence, the warnings gathered so far, and how to state a ruling. */
interface Table {
  e: Evidence;
  warnings: Warning[];
  say: Say;
}

type ValidManifest = Extract<Evidence['manifest'], { kind: 'manifest' }>;
type DetectedMark = Extract<Evidence['watermark'], { detected: true }>;

/**
 * The decision table: the first row whose condition holds decides. Manifest failures come first (they are
 * facts about the file whatever else ran), then a failed signal service makes the result inconclusive,
 * then the positive outcomes, strongest first. What each outcome is told in words is verdict-text.ts's.
 */
export function rule(e: Evidence): Ruling {
  const warnings = warningsOfTheFile(e);
  const say: Say = (status, confidence, more = {}) => {
    const { matches = [], ...why } = more;
    return { status, confidence, matches, warnings, ...why };
  };
  const table: Table = { e, warnings, say };
  return (
    manifestFailure(table) ??
    inconclusive(table) ??
    (e.manifest.kind === 'manifest' ? manifestOutcome(table, e.manifest) : softSignalOutcome(table))
  );
}

/** The warnings that hold whatever the status: the revocation check could not run, or trust is only interim. */
function warningsOfTheFile(e: Evidence): Warning[] {
  const warnings: Warning[] = [];
  if (e.ocsp === 'unavailable') warnings.push('ocsp_unavailable');
  // Trusted only through the frozen interim list: said apart from the official C2PA Trust List.
  if (e.manifest.kind === 'manifest' && e.manifest.trusted && e.manifest.trustedBy === 'interim')
    warnings.push('interim_trust_list');
  return warnings;
}

/** A "weighted, low" confidence: evidence exists but something is wrong (LOW_CONFIDENCE_CAP). */
const low = (parts: Part[]) => Math.min(LOW_CONFIDENCE_CAP, weighted(parts));

/** A detected mark that cannot stand for a record on its own: low, whatever its decoding confidence. */
const lowMark = (confidence: number) => Math.min(LOW_CONFIDENCE_CAP, round(0.3 * confidence));

/** The rows on a manifest that cannot be relied on: unreadable, forged, revoked, modified, expired or untrusted. */
function manifestFailure({ e, say }: Table): Ruling | undefined {
  const m = e.manifest;
  if (m.kind === 'malformed') return say('manifest_malformed', null);
  if (m.kind === 'unreachable') return say('manifest_unreachable', null);
  if (m.kind !== 'manifest') return undefined;
  if (!m.signatureValid) return say('manifest_tampered', null);
  if (e.ocsp === 'revoked') return say('manifest_signer_revoked', null);
  const weakened = (status: Status, factor: number) =>
    say(status, low([[SIGNAL_WEIGHTS.manifest, factor], ...ocspPart(e.ocsp), ...anchorPart(e.anchor)]));
  if (!m.hardBindingValid) return weakened('manifest_content_modified', 0.3);
  if (m.certificateExpired) return weakened('manifest_certificate_expired', 0.5);
  if (!m.trusted) return weakened('manifest_signer_untrusted', 0.6);
  return undefined;
}

/** The row for a signal service that did not answer: inconclusive, weighed over the signals that ran. */
function inconclusive({ e, warnings, say }: Table): Ruling | undefined {
  const failed = failedServices(e);
  if (failed.length === 0) return undefined;
  warnings.push(...failed.map((s) => `${s}_unavailable` as const));
  const parts: Part[] = [];
  if (e.manifest.kind === 'manifest') parts.push([SIGNAL_WEIGHTS.manifest, 1], ...ocspPart(e.ocsp));
  if (e.watermark.ran)
    parts.push([SIGNAL_WEIGHTS.watermark, e.watermark.detected && e.watermark.registered ? e.watermark.confidence : 0]);
  if (e.fingerprint.ran && e.fingerprint.matches.length)
    parts.push([SIGNAL_WEIGHTS.fingerprint, Math.max(...e.fingerprint.matches.map((x) => x.similarity))]);
  parts.push(...anchorPart(e.anchor));
  return say('inconclusive', weighted(parts), { failed });
}

/** The rows on a valid, trusted manifest: the ledger or the watermark may contradict it, or the mark confirms it. */
function manifestOutcome({ e, warnings, say }: Table, m: ValidManifest): Ruling {
  const manifest: Part[] = [[SIGNAL_WEIGHTS.manifest, 1], ...ocspPart(e.ocsp)];
  if (e.anchor.ran && !e.anchor.match) return say('anchor_mismatch', low([...manifest, [SIGNAL_WEIGHTS.anchor, 0]]));
  const wm = e.watermark;
  const conflict = watermarkConflict(m, wm);
  if (conflict)
    return say('manifest_watermark_conflict', low([...manifest, [SIGNAL_WEIGHTS.watermark, 0]]), { conflict });
  if (wm.ran && wm.detected && m.softBindingValue && wm.payloadHex === m.softBindingValue) {
    return say(
      'verified_manifest_and_watermark_match',
      weighted([...manifest, [SIGNAL_WEIGHTS.watermark, wm.confidence], ...anchorPart(e.anchor)]),
    );
  }
  if (m.softBindingValue && wm.ran && !wm.detected) warnings.push('watermark_not_found');
  return say('verified_manifest', weighted([...manifest, ...anchorPart(e.anchor)]));
}

/**
 * Whether the watermark belongs to another record: either the manifest names a different payload, or the
 * manifest (linked to its asset by Cairn's signature) and the registered mark name two different assets.
 */
function watermarkConflict(m: ValidManifest, wm: Evidence['watermark']): Ruling['conflict'] {
  if (!wm.ran || !wm.detected) return undefined;
  if (m.softBindingValue !== undefined && wm.payloadHex !== m.softBindingValue) return 'payload';
  if (wm.registered && wm.assetId !== undefined && m.assetId !== undefined && wm.assetId !== m.assetId) return 'asset';
  return undefined;
}

/** The rows without a manifest: the soft signals can still lead back to a record. */
function softSignalOutcome(table: Table): Ruling {
  const { e, say } = table;
  const wm = e.watermark;
  if (wm.ran && wm.detected && wm.registered) return registeredMarkOutcome(table, wm);
  if (wm.ran && wm.detected) return say('watermark_unregistered', lowMark(wm.confidence));
  if (e.fingerprint.ran && e.fingerprint.matches.length > 0) {
    const best = Math.max(...e.fingerprint.matches.map((x) => x.similarity));
    return say('fingerprint_match_only', weighted([[SIGNAL_WEIGHTS.fingerprint, best]]), {
      matches: e.fingerprint.matches,
    });
  }
  return say('no_provenance', 0);
}

/** A registered mark without a manifest: it leads to its asset's record, unless the content is not that asset's. */
function registeredMarkOutcome({ e, warnings, say }: Table, wm: DetectedMark): Ruling {
  if (wm.keyless) warnings.push('watermark_keyless');
  // A mark on content that is not the asset's (copied onto other content): never a match, and the asset is not
  // named, since naming it would hand a copied mark the victim's record.
  if (wm.contentConsistent === false) {
    warnings.push('watermark_content_mismatch');
    return say('watermark_only', lowMark(wm.confidence));
  }
  // A fingerprint match to the asset the watermark names is a second, independent path to the same record.
  const parts: Part[] = [[SIGNAL_WEIGHTS.watermark, wm.confidence]];
  const sameAsset = e.fingerprint.ran
    ? e.fingerprint.matches.filter((x) => wm.assetId !== undefined && x.assetId === wm.assetId)
    : [];
  if (sameAsset.length) parts.push([SIGNAL_WEIGHTS.fingerprint, Math.max(...sameAsset.map((x) => x.similarity))]);
  return say('watermark_only', weighted(parts), { matches: e.watermarkMatch ? [e.watermarkMatch] : [] });
}
