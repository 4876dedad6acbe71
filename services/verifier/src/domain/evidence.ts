import type { TrustListKind } from './trust-decision.js';

/**
 * Whose key signed the manifest Cairn kept for an asset: Cairn's own, or the signing tenant's (BYOK).
 */
export type SigningKey = 'cairn' | 'tenant';

/**
 * Everything the verifier learned about a file, signal by signal, before any judgement. Each signal says
 * whether it ran, failed (its service was down: the verdict may be inconclusive) or was not applicable.
 */
export type ManifestEvidence =
  | { kind: 'none' }
  | { kind: 'malformed'; detail: string }
  | { kind: 'unreachable'; url: string }
  | {
      kind: 'manifest';
      signatureValid: boolean;
      trusted: boolean;
      hardBindingValid: boolean;
      certificateExpired: boolean;
      timestamped: boolean;
      signerName?: string;
      /** Set when the manifest is the one Cairn kept for an asset (app/verify/records.ts). */
      signingKey?: SigningKey;
      signedAt?: string;
      claims: {
        generator?: string;
        model?: string;
        aiGenerated: boolean;
        aiAssisted: boolean;
        createdAt?: string;
        origin?: string;
      };
      /** The watermark the manifest's soft-binding assertion names (payload hex), if any. */
      softBindingValue?: string;
      manifestId?: string;
      assetId?: string;
      validationCodes: string[];
      /** The trust list whose anchor the signer chains to (domain/trust-decision.ts), when one does. */
      trustedBy?: TrustListKind;
    };

export type OcspEvidence = 'good' | 'revoked' | 'unknown' | 'unavailable' | 'not_checked';

export type WatermarkEvidence =
  | { ran: false; reason: 'not_applicable' | 'failed'; detail?: string }
  | { ran: true; detected: false }
  | {
      ran: true;
      detected: true;
      payloadHex: string;
      confidence: number;
      registered: boolean;
      assetId?: string;
      watermarkId?: string;
      /** Embedded without a secret key (`cairn-dct-v1`): anyone with the published code could have written it. */
      keyless?: boolean;
      /**
       * Whether the content also looks like the registered asset (its fingerprint within the lookup radius).
       * Undefined when not checked (a manifest decides, or the lookup could not run).
       */
      contentConsistent?: boolean;
    };

export interface SoftMatch {
  assetId: string;
  manifestUri: string;
  verifierUrl: string;
  via: 'watermark' | 'fingerprint';
  similarity: number;
}

export type FingerprintEvidence =
  { ran: false; reason: 'not_available' | 'failed'; detail?: string } | { ran: true; matches: SoftMatch[] };

/**
 * The anchor signal. Not run: `not_available` (no Cairn manifest whose store could be read from the file),
 * `not_anchored` (the asset's recipe has no anchor layer), `pending` (its batch is not yet confirmed on chain),
 * `failed` (the anchor service or the chain did not answer). Run: the digest of the manifest store found in the
 * file was (or was not) proved included in the root its batch's transaction carries on chain.
 */
export type AnchorEvidence =
  | { ran: false; reason: 'not_available' | 'failed' | 'pending' | 'not_anchored'; detail?: string }
  | {
      ran: true;
      match: boolean;
      detail?: string;
      txHash?: string;
      chainId?: number;
      blockNumber?: number;
      confirmedAt?: string;
    };

export interface Evidence {
  manifest: ManifestEvidence;
  ocsp: OcspEvidence;
  watermark: WatermarkEvidence;
  fingerprint: FingerprintEvidence;
  anchor: AnchorEvidence;
  /** Public URLs of the matched record, for watermark-only results. */
  watermarkMatch?: SoftMatch;
}
