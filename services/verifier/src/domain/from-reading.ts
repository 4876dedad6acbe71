import type { C2paReading } from './c2pa/types.js';
import type { ManifestEvidence, SigningKey } from './evidence.js';
import type { TrustListKind } from './trust-decision.js';

/** Said after the signer's name when a tenant signed with its own key: the name is its certificate's, not Cairn's. */
export const TENANT_KEY_NOTE = "(the tenant's own key)";

/**
 * The signer as people should read it: organisation and name from the leaf certificate; for a Cairn asset signed
 * with the tenant's own key (BYOK), said so, since pages hosted by Cairn show it.
 */
function signerName(
  reading: Extract<C2paReading, { kind: 'manifest' }>,
  signingKey: SigningKey | undefined,
): string | undefined {
  const { organization, commonName } = reading.signer;
  const name = [organization, commonName].filter(Boolean).join(' — ') || undefined;
  if (signingKey !== 'tenant') return name;
  return name ? `${name} ${TENANT_KEY_NOTE}` : `the signing tenant ${TENANT_KEY_NOTE.slice(1, -1)}`;
}

/**
 * Turns the C2PA reading into decision-table evidence. Tampering covers both a failed claim signature and
 * a failed assertion check (docs/decisions/0009-verification-statuses.md: "claim signature or an assertion hash
 * fails"); the hard binding is judged separately as content modification.
 */
export function manifestEvidence(
  reading: C2paReading,
  ids: { manifestId?: string; assetId?: string; signingKey?: SigningKey; trustedBy?: TrustListKind } = {},
): ManifestEvidence {
  switch (reading.kind) {
    case 'none':
    case 'unsupported':
      return { kind: 'none' };
    case 'malformed':
      return { kind: 'malformed', detail: reading.detail };
    case 'remote':
      return { kind: 'unreachable', url: reading.url };
    case 'manifest': {
      const claims = reading.claims;
      return {
        kind: 'manifest',
        signatureValid: reading.signatureValid && reading.assertionsValid,
        trusted: reading.trusted,
        hardBindingValid: reading.hardBindingValid,
        certificateExpired: reading.certificateExpired,
        timestamped: reading.timestamped && reading.timestampTrusted,
        signerName: signerName(reading, ids.signingKey),
        ...(ids.signingKey ? { signingKey: ids.signingKey } : {}),
        // Only a trusted time-stamp dates a signature; created_at is the signer's claim about generation.
        signedAt: reading.signedAt,
        claims: {
          generator: claims.generator,
          model: claims.model,
          aiGenerated: claims.aiGenerated,
          aiAssisted: claims.aiAssisted,
          createdAt: claims.createdAt,
          origin: claims.claimGenerator,
        },
        softBindingValue: reading.softBinding?.value,
        ...(ids.manifestId ? { manifestId: ids.manifestId } : {}),
        ...(ids.assetId ? { assetId: ids.assetId } : {}),
        validationCodes: reading.validationCodes,
        ...(reading.trusted && ids.trustedBy ? { trustedBy: ids.trustedBy } : {}),
      };
    }
  }
}
