import type { ManifestReading } from '../../src/domain/c2pa/types.js';

/**
 * What c2pa-rs reports of a manifest that checks out: signature, assertions and hard binding valid, the chain
 * trusted, neither expired nor revoked, and no OCSP responder asked.
 */
export const VALID_AND_TRUSTED = {
  signatureValid: true,
  assertionsValid: true,
  hardBindingValid: true,
  trusted: true,
  certificateExpired: false,
  revoked: false,
  ocspStatus: 'not_checked',
} as const satisfies Partial<ManifestReading>;

/** A reading of a valid, trusted manifest with no time-stamp, no claims and no soft binding; `overrides` replace. */
export function trustedReading(overrides: Partial<ManifestReading> = {}): ManifestReading {
  return {
    kind: 'manifest',
    activeLabel: 'urn:c2pa:1',
    validationState: 'Trusted',
    ...VALID_AND_TRUSTED,
    timestamped: false,
    timestampTrusted: false,
    signer: { certChainPem: [] },
    claims: { aiGenerated: false, aiAssisted: false },
    softBindings: [],
    validationCodes: [],
    validationEntries: [],
    manifestStore: null,
    ...overrides,
  };
}
