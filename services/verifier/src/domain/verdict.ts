import type { Evidence, SigningKey, SoftMatch } from './evidence.js';

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

/**
 * Statuses marked "weighted, low" in docs/decisions/0009-verification-statuses.md are capped here: evidence exists but
 * something is wrong.
 */
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

function failedServices(e: Evidence): Array<'watermark' | 'soft_binding' | 'anchor'> {
  const failed: Array<'watermark' | 'soft_binding' | 'anchor'> = [];
  if (!e.watermark.ran && e.watermark.reason === 'failed') failed.push('watermark');
  if (!e.fingerprint.ran && e.fingerprint.reason === 'failed') failed.push('soft_binding');
  if (!e.anchor.ran && e.anchor.reason === 'failed') failed.push('anchor');
  return failed;
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

const day = (iso: string | undefined) => (iso ? iso.slice(0, 10) : 'an unknown date');

/** What the manifest itself supports, in plain sentences. */
function manifestProves(e: Evidence): string[] {
  if (e.manifest.kind !== 'manifest') return [];
  const { signerName, signedAt, claims } = e.manifest;
  const proves = [
    `The file was signed by ${signerName ?? 'the holder of the signing certificate'} on ${day(signedAt)}.`,
  ];
  proves.push('The file has not been changed since it was signed.');
  if (claims.aiGenerated)
    proves.push(
      `The signer declared it as generated by AI${claims.generator ? ` (${claims.generator}${claims.model ? `, ${claims.model}` : ''})` : ''}.`,
    );
  if (e.anchor.ran && e.anchor.match)
    proves.push(
      `This exact manifest was recorded on a public ledger on ${day(e.anchor.confirmedAt)}${e.anchor.txHash ? ` (transaction ${e.anchor.txHash})` : ''}.`,
    );
  return proves;
}

/** What the anchor signal found, for the developer explanation (empty when it had nothing to look at). */
function anchorNote(anchor: Evidence['anchor']): string {
  if (anchor.ran) {
    return anchor.match
      ? ` Anchor: the manifest store's SHA-256 is proved included (RFC 6962) in the root carried on chain${anchor.txHash ? ` by ${anchor.txHash}` : ''}.`
      : ` Anchor: the manifest store's SHA-256 does not lead to the root carried on chain (${anchor.detail ?? 'mismatch'}).`;
  }
  if (anchor.reason === 'pending') return ' Anchor: not checked yet — the asset’s batch is not confirmed on chain.';
  if (anchor.reason === 'not_anchored') return ' Anchor: the asset was not anchored (its recipe has no anchor layer).';
  if (anchor.reason === 'failed') return ' Anchor: the anchor service or the chain did not answer.';
  return '';
}

/** Cairn checked that the tenant holds its key (at registration and on every signature), not who the tenant is. */
const TENANT_KEY_UNPROVEN =
  'That Cairn vouches for the name in the signer’s certificate: the file was signed with the signing tenant’s own key, which Cairn checked the tenant holds, not Cairn’s.';

const ALWAYS_UNPROVEN = [
  'That what the file shows actually happened.',
  'Who wrote the prompt or requested the content.',
];

/**
 * The decision table: the first row whose condition holds decides. Manifest failures come first (they are
 * facts about the file whatever else ran), then a failed signal service makes the result inconclusive,
 * then the positive outcomes, strongest first.
 */
export function decide(e: Evidence): Verdict {
  const signals = signalsOf(e);
  const claims = claimsOf(e);
  const warnings: Warning[] = [];
  if (e.ocsp === 'unavailable') warnings.push('ocsp_unavailable');
  // Trusted only through the frozen interim list: said apart from the official C2PA Trust List.
  if (e.manifest.kind === 'manifest' && e.manifest.trusted && e.manifest.trustedBy === 'interim')
    warnings.push('interim_trust_list');
  const failed = failedServices(e);
  const m = e.manifest;

  const result = (
    status: Status,
    confidence: number | null,
    text: { user: string; developer: string; proves?: string[]; doesNotProve?: string[] },
    matches: SoftMatch[] = [],
  ): Verdict => ({
    status,
    confidence,
    signals,
    ...(claims && confidence !== null ? { claims } : {}),
    matches,
    warnings,
    developer_explanation:
      text.developer +
      anchorNote(e.anchor) +
      (warnings.includes('interim_trust_list')
        ? ' Trust: the signer chains only to the frozen interim trust list, not to the official C2PA Trust List.'
        : ''),
    user_explanation: text.user,
    proves: text.proves ?? [],
    does_not_prove: [
      ...(text.doesNotProve ?? []),
      ...(m.kind === 'manifest' && m.signingKey === 'tenant' ? [TENANT_KEY_UNPROVEN] : []),
      ...ALWAYS_UNPROVEN,
    ],
  });

  if (m.kind === 'malformed') {
    return result('manifest_malformed', null, {
      user: 'This file carries provenance data that is damaged and cannot be read, so nothing about its origin can be confirmed.',
      developer: `C2PA manifest store present but unparseable: ${m.detail}.`,
      doesNotProve: ['Anything about who made the file or how.'],
    });
  }
  if (m.kind === 'unreachable') {
    return result('manifest_unreachable', null, {
      user: 'This file points to provenance data stored elsewhere that could not be retrieved, so its origin cannot be confirmed.',
      developer: `Remote manifest reference ${m.url} not fetched (not an allowed manifest host or the fetch failed).`,
      doesNotProve: ['Anything about who made the file or how.'],
    });
  }
  if (m.kind === 'manifest') {
    if (!m.signatureValid) {
      return result('manifest_tampered', null, {
        user: 'This file’s provenance signature does not match: the signed record was altered or forged. Do not rely on its claims.',
        developer: `Claim signature or assertion hash check failed (${m.validationCodes.join(', ') || 'signature mismatch'}).`,
        doesNotProve: ['Who made the file.', 'That any claim in its manifest is true.'],
      });
    }
    if (e.ocsp === 'revoked') {
      return result('manifest_signer_revoked', null, {
        user: 'The certificate that signed this file has been revoked by its issuer, so its signature can no longer be trusted.',
        developer: 'OCSP responder reports the signing certificate revoked.',
        doesNotProve: ['Who made the file.'],
      });
    }
    const low = (status: Status, factor: number, text: Parameters<typeof result>[2]) =>
      result(
        status,
        Math.min(
          LOW_CONFIDENCE_CAP,
          weighted([[SIGNAL_WEIGHTS.manifest, factor], ...ocspPart(e.ocsp), ...anchorPart(e.anchor)]),
        ),
        text,
      );
    if (!m.hardBindingValid) {
      return low('manifest_content_modified', 0.3, {
        user: 'This file was signed, but its content was changed after signing. What you see is not what was signed.',
        developer: `Claim signature valid; hard binding (content hash) mismatch (${m.validationCodes.join(', ')}).`,
        proves: [
          `A version of this file was signed by ${m.signerName ?? 'the certificate holder'} on ${day(m.signedAt)}.`,
        ],
        doesNotProve: ['That this version of the content is the one that was signed.'],
      });
    }
    if (m.certificateExpired) {
      return low('manifest_certificate_expired', 0.5, {
        user: 'This file was signed with a certificate that had already expired, and no trusted time-stamp shows it was signed in time.',
        developer: 'Signing certificate outside its validity at signing time; no trusted timestamp.',
        doesNotProve: ['That the signer’s identity was current when the file was signed.'],
      });
    }
    if (!m.trusted) {
      return low('manifest_signer_untrusted', 0.6, {
        user: `This file is signed${m.signerName ? ` by “${m.signerName}”` : ''}, but that signer is not on the trust list in force, so its identity is not vouched for.`,
        developer:
          'Claim signature and hard binding valid; certificate chain does not lead to a trust anchor in force.',
        proves: ['The file has not been changed since it was signed.'],
        doesNotProve: ['That the signer is who its certificate says.'],
      });
    }
  }

  if (failed.length > 0) {
    warnings.push(...failed.map((s) => `${s}_unavailable` as const));
    const parts: Part[] = [];
    if (m.kind === 'manifest') parts.push([SIGNAL_WEIGHTS.manifest, 1], ...ocspPart(e.ocsp));
    if (e.watermark.ran)
      parts.push([
        SIGNAL_WEIGHTS.watermark,
        e.watermark.detected && e.watermark.registered ? e.watermark.confidence : 0,
      ]);
    if (e.fingerprint.ran && e.fingerprint.matches.length)
      parts.push([SIGNAL_WEIGHTS.fingerprint, Math.max(...e.fingerprint.matches.map((x) => x.similarity))]);
    parts.push(...anchorPart(e.anchor));
    return result('inconclusive', weighted(parts), {
      user: 'Not every check could be completed right now, so this file’s provenance cannot be fully assessed. Try again later.',
      developer: `Signal service(s) failed: ${failed.join(', ')}; weighed over the signals that ran.`,
      proves: m.kind === 'manifest' ? manifestProves(e) : [],
    });
  }

  if (m.kind === 'manifest') {
    if (e.anchor.ran && !e.anchor.match) {
      return result(
        'anchor_mismatch',
        Math.min(
          LOW_CONFIDENCE_CAP,
          weighted([[SIGNAL_WEIGHTS.manifest, 1], ...ocspPart(e.ocsp), [SIGNAL_WEIGHTS.anchor, 0]]),
        ),
        {
          user: 'This file’s signature is valid, but its record on the public ledger does not match it. Treat its provenance with caution.',
          developer: 'Manifest valid and trusted; anchored digest contradicts the chain.',
          proves: manifestProves(e),
          doesNotProve: ['That the record was published when the ledger entry says.'],
        },
      );
    }
    const wm = e.watermark;
    // The watermark belongs to another record: either the manifest names a different payload, or the manifest
    // (linked to its asset by Cairn's signature) and the registered mark name two different assets.
    const otherPayload =
      wm.ran && wm.detected && m.softBindingValue !== undefined && wm.payloadHex !== m.softBindingValue;
    const otherAsset =
      wm.ran &&
      wm.detected &&
      wm.registered &&
      wm.assetId !== undefined &&
      m.assetId !== undefined &&
      wm.assetId !== m.assetId;
    if (wm.ran && wm.detected && (otherPayload || otherAsset)) {
      return result(
        'manifest_watermark_conflict',
        Math.min(
          LOW_CONFIDENCE_CAP,
          weighted([[SIGNAL_WEIGHTS.manifest, 1], ...ocspPart(e.ocsp), [SIGNAL_WEIGHTS.watermark, 0]]),
        ),
        {
          user: 'This file’s signature is valid, but its invisible watermark belongs to a different record. It may have been assembled from another signed file.',
          developer: otherPayload
            ? `Manifest names watermark ${m.softBindingValue}; decoded ${wm.payloadHex}.`
            : `Manifest is asset ${m.assetId}'s; the watermark ${wm.payloadHex} is registered to ${wm.assetId}.`,
          proves: manifestProves(e),
          doesNotProve: ['That the pixels and the manifest started life together.'],
        },
      );
    }
    if (wm.ran && wm.detected && m.softBindingValue && wm.payloadHex === m.softBindingValue) {
      return result(
        'verified_manifest_and_watermark_match',
        weighted([
          [SIGNAL_WEIGHTS.manifest, 1],
          ...ocspPart(e.ocsp),
          [SIGNAL_WEIGHTS.watermark, wm.confidence],
          ...anchorPart(e.anchor),
        ]),
        {
          user: `Verified: signed by ${m.signerName ?? 'a trusted signer'} on ${day(m.signedAt)}, unchanged since, and its invisible watermark matches the signed record.`,
          developer:
            'Manifest valid and trusted; watermark decodes to the payload named in the manifest’s soft-binding assertion.',
          proves: [...manifestProves(e), 'The invisible watermark in the content belongs to this signed record.'],
        },
      );
    }
    if (m.softBindingValue && wm.ran && !wm.detected) warnings.push('watermark_not_found');
    return result(
      'verified_manifest',
      weighted([[SIGNAL_WEIGHTS.manifest, 1], ...ocspPart(e.ocsp), ...anchorPart(e.anchor)]),
      {
        user: `Verified: signed by ${m.signerName ?? 'a trusted signer'} on ${day(m.signedAt)} and unchanged since.`,
        developer: m.softBindingValue
          ? 'Manifest valid and trusted; the watermark it names was not found in the content.'
          : 'Manifest valid and trusted; no watermark expected.',
        proves: manifestProves(e),
      },
    );
  }

  // No manifest: the soft signals can still lead back to a record.
  const wm = e.watermark;
  if (wm.ran && wm.detected && wm.registered) {
    const matches = e.watermarkMatch ? [e.watermarkMatch] : [];
    if (wm.keyless) warnings.push('watermark_keyless');
    // A mark on content that is not the asset's (copied onto other content): never a match, and the asset is not
    // named, since naming it would hand a copied mark the victim's record.
    if (wm.contentConsistent === false) {
      warnings.push('watermark_content_mismatch');
      return result(
        'watermark_only',
        Math.min(LOW_CONFIDENCE_CAP, round(0.3 * wm.confidence)),
        {
          user: 'This file carries an invisible watermark registered with Cairn, but the content does not look like the signed asset it was made for. The watermark may have been copied onto other content; it does not identify this file.',
          developer: `No C2PA manifest; watermark payload ${wm.payloadHex} is registered, but the content does not match the asset it was embedded in (fingerprint outside the lookup radius, or the content check of a cairn-sync-v2 mark failed).`,
          proves: ['The content carries a watermark registered with Cairn.'],
          doesNotProve: ['That this content is the signed asset, or derived from it.'],
        },
        [],
      );
    }
    // A fingerprint match to the asset the watermark names is a second, independent path to the same record.
    const parts: Part[] = [[SIGNAL_WEIGHTS.watermark, wm.confidence]];
    const sameAsset = e.fingerprint.ran
      ? e.fingerprint.matches.filter((x) => wm.assetId !== undefined && x.assetId === wm.assetId)
      : [];
    if (sameAsset.length) parts.push([SIGNAL_WEIGHTS.fingerprint, Math.max(...sameAsset.map((x) => x.similarity))]);
    return result(
      'watermark_only',
      weighted(parts),
      {
        user: 'This file has no provenance manifest (it was probably stripped), but its invisible watermark leads to a signed record. See the match for the original.',
        developer: `No C2PA manifest; watermark payload ${wm.payloadHex} is registered${wm.assetId ? ` to ${wm.assetId}` : ''}.`,
        proves: ['The content carries a watermark Cairn embedded when an asset was signed.'],
        doesNotProve: ['That the content was not edited after that asset was signed.'],
      },
      matches,
    );
  }
  if (wm.ran && wm.detected) {
    return result('watermark_unregistered', Math.min(LOW_CONFIDENCE_CAP, round(0.3 * wm.confidence)), {
      user: 'This file carries an invisible watermark, but it does not lead to any known record.',
      developer: `Watermark payload ${wm.payloadHex} decoded with a valid check but is not in the registry.`,
      doesNotProve: ['Who made the file.'],
    });
  }
  if (e.fingerprint.ran && e.fingerprint.matches.length > 0) {
    const best = Math.max(...e.fingerprint.matches.map((x) => x.similarity));
    return result(
      'fingerprint_match_only',
      weighted([[SIGNAL_WEIGHTS.fingerprint, best]]),
      {
        user: 'This file has no manifest or watermark, but it closely resembles a signed asset. See the matches.',
        developer: `Soft-binding lookup: ${e.fingerprint.matches.length} match(es), best similarity ${best}.`,
        proves: ['The content is perceptually similar to a signed asset.'],
        doesNotProve: ['That it is the same file, or derived from it.'],
      },
      e.fingerprint.matches,
    );
  }
  return result('no_provenance', 0, {
    user: 'No provenance information was found in this file. That does not mean it is fake — only that nothing here says where it came from.',
    developer: 'No manifest, no watermark, no soft-binding match.',
    doesNotProve: ['That the file is authentic or that it is not.'],
  });
}
