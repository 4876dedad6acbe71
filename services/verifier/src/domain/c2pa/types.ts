// The verifier's normalised view of what c2pa-rs found in an asset: one variant per outcome the status
// decision needs to tell apart, with the c2pa-rs validation codes already sorted into booleans.

export interface ReadManifestInput {
  asset: Buffer;
  /** Sniffed MIME type; c2pa-rs picks its parser from it. */
  mimeType: string;
  /** PEM certificates of the trust list in force (default list or a tenant's custom list). Empty = trust nothing. */
  trustAnchorsPem: string[];
  /** Remote manifests are never fetched by this reader (no outbound calls to non-allowlisted hosts). */
  allowRemoteFetch: false;
  /**
   * A sidecar manifest store for an asset that carries none (text): validated against the asset's bytes (its
   * hard binding is a data hash over them) instead of looking inside the asset.
   */
  sidecar?: Buffer;
}

/** Where a validation code came from in c2pa-rs's `validation_results`. */
export interface ValidationEntry {
  code: string;
  kind: 'success' | 'informational' | 'failure';
  /** `active` = the active manifest; `ingredient` = an ingredient's delta (history, not this asset). */
  scope: 'active' | 'ingredient';
  url?: string;
  explanation?: string;
  /** For an ingredient delta: the JUMBF URI of the ingredient assertion it is about. */
  ingredientUri?: string;
}

export interface SignerInfo {
  commonName?: string;
  organization?: string;
  /** Lower-case hex, no leading zeros beyond one byte's worth. */
  serialHex?: string;
  /** Leaf first, as carried in the COSE x5chain. Empty when the store could not be extracted. */
  certChainPem: string[];
  /** Validity of the leaf (ISO 8601), when the chain was available. */
  notBefore?: string;
  notAfter?: string;
}

export interface C2paClaims {
  /** `cairn/<version>`-style claim generator of the active manifest. */
  claimGenerator?: string;
  title?: string;
  generator?: string;
  model?: string;
  digitalSourceType?: string;
  /** The inception action's digital source type is trained-algorithmic (the asset is AI-generated). */
  aiGenerated: boolean;
  /** Not AI-generated as a whole, but an action or composite source type says AI took part. */
  aiAssisted: boolean;
  createdAt?: string;
  creator?: string;
  legalEntity?: string;
  legalCaseRef?: string;
  /** `sha256:<hex>` of the prompt (Cairn's generation assertion). */
  promptHash?: string;
  /**
   * The Cairn asset and manifest named by the `com.cairn.record` assertion. Anyone can write one: it means
   * something only under Cairn's own signature (see domain/cairn-link.ts).
   */
  cairnRecord?: { assetId: string; manifestId: string };
}

export interface SoftBindingClaim {
  alg: string;
  value: string;
}

/** OCSP outcome as c2pa-rs reported it (stapled response; this reader never fetches OCSP). */
export type OcspStatus = 'good' | 'revoked' | 'unknown' | 'unavailable' | 'not_checked';

export interface ManifestReading {
  kind: 'manifest';
  activeLabel: string;
  /** c2pa-rs `validation_state`: Invalid | Valid | Trusted. */
  validationState: string;
  /** COSE claim signature verifies against the certificate it carries (no claimSignature / credential-invalid failure). */
  signatureValid: boolean;
  /** Claim and assertion integrity: assertion hashes, required parts present, well-formed claim. */
  assertionsValid: boolean;
  /** The hard binding (data / BMFF / boxes / collection hash) matches the asset's bytes. */
  hardBindingValid: boolean;
  /** The signer's chain ends in one of the trust anchors in force. */
  trusted: boolean;
  /** The certificate was not valid at signing time (time-stamp time, or now when there is no time-stamp). */
  certificateExpired: boolean;
  revoked: boolean;
  ocspStatus: OcspStatus;
  /** A RFC 3161 time-stamp is present and its message digest matched. */
  timestamped: boolean;
  /** ...and the TSA's certificate is trusted. */
  timestampTrusted: boolean;
  signer: SignerInfo;
  /** Time-stamp time (c2pa-rs signature_info.time); absent without a TSA time-stamp. */
  signedAt?: string;
  claims: C2paClaims;
  softBinding?: SoftBindingClaim;
  softBindings: SoftBindingClaim[];
  thumbnail?: { mimeType: string; bytes: Buffer };
  /** Failure and informational codes of the active manifest (deduplicated, in c2pa-rs order). */
  validationCodes: string[];
  /** Every code with its kind and scope, including successes and ingredient deltas. */
  validationEntries: ValidationEntry[];
  /** The JUMBF manifest store as found in the asset, when this format's container could be walked. */
  manifestStore: Buffer | null;
}

export type C2paReading =
  | { kind: 'none' }
  /** c2pa-rs has no parser for this MIME type (e.g. OGG, WebM): any provenance is a sidecar, found elsewhere. */
  | { kind: 'unsupported'; mimeType: string }
  | { kind: 'malformed'; detail: string }
  | { kind: 'remote'; url: string; fetched: false }
  | ManifestReading;
