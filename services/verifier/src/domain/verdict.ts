import type { Evidence, SigningKey, SoftMatch } from './evidence.js';
import { rule, type Status } from './verdict-table.js';
import { explain } from './verdict-text.js';

// The verdict is the table's ruling (verdict-table.ts) told in words (verdict-text.ts).
export { LOW_CONFIDENCE_CAP, SIGNAL_WEIGHTS, STATUSES, WARNINGS, type Status, type Warning } from './verdict-table.js';

export interface Signals {
  c2pa_manifest_present?: boolean;
  c2pa_signature_valid?: boolean;
  signer_trusted?: boolean;
  timestamp_valid?: boolean;
  ocsp_status: string;
  watermark_present?: boolean;
  watermark_payload_valid?: boolean;
  fingerprint_match?: boolean;
  anchor_match?: boolean;
}

export interface Claims {
  origin?: string;
  generator?: string;
  model?: string;
  ai_generated?: boolean;
  ai_assisted?: boolean;
  created_at?: string;
  signed_by?: string;
  signed_at?: string;
  /** Whose key signed a Cairn asset's manifest: Cairn's ('cairn') or the signing tenant's own ('tenant', BYOK). */
  signing_key?: SigningKey;
}

export interface Verdict {
  status: Status;
  confidence: number | null;
  signals: Signals;
  claims?: Claims;
  matches: SoftMatch[];
  warnings: string[];
  developer_explanation: string;
  user_explanation: string;
  proves: string[];
  does_not_prove: string[];
}

function signalsOf(e: Evidence): Signals {
  const m = e.manifest;
  const signals: Signals = { ocsp_status: e.ocsp, c2pa_manifest_present: m.kind !== 'none' };
  if (m.kind === 'manifest') {
    signals.c2pa_signature_valid = m.signatureValid;
    signals.signer_trusted = m.signatureValid && m.trusted;
    signals.timestamp_valid = m.timestamped;
  }
  if (e.watermark.ran) {
    signals.watermark_present = e.watermark.detected;
    if (e.watermark.detected) signals.watermark_payload_valid = e.watermark.registered;
  }
  if (e.fingerprint.ran) signals.fingerprint_match = e.fingerprint.matches.length > 0;
  if (e.anchor.ran) signals.anchor_match = e.anchor.match;
  return signals;
}

function claimsOf(e: Evidence): Claims | undefined {
  if (e.manifest.kind !== 'manifest') return undefined;
  const { claims, signerName, signedAt } = e.manifest;
  return {
    origin: claims.origin,
    generator: claims.generator,
    model: claims.model,
    ai_generated: claims.aiGenerated,
    ai_assisted: claims.aiAssisted,
    created_at: claims.createdAt,
    signed_by: signerName,
    signed_at: signedAt,
    ...(e.manifest.signingKey ? { signing_key: e.manifest.signingKey } : {}),
  };
}

/** The verdict on the evidence: the decision table's ruling, its signals and claims, and its explanation. */
export function decide(e: Evidence): Verdict {
  const signals = signalsOf(e);
  const claims = claimsOf(e);
  const ruling = rule(e);
  return {
    status: ruling.status,
    confidence: ruling.confidence,
    signals,
    ...(claims && ruling.confidence !== null ? { claims } : {}),
    matches: ruling.matches,
    warnings: ruling.warnings,
    ...explain(ruling, e),
  };
}
