// c2pa-rs 0.90 validation status codes (sdk/src/validation_results.rs `validation_codes`), sorted by what they
// mean for Cairn's verification status. Only failure-kind entries of the active manifest count against it.
import type { ManifestReading, OcspStatus, ValidationEntry } from './types.js';

/** The COSE signature or the credential it is checked with is bad → manifest_tampered. */
export const SIGNATURE_FAILURES: ReadonlySet<string> = new Set([
  'claimSignature.mismatch',
  'claimSignature.missing',
  'signingCredential.invalid', // certificate profile violated, or unparsable
  'algorithm.unsupported',
]);

/** The claim no longer matches its assertions, or is structurally broken → manifest_tampered. */
export const ASSERTION_FAILURES: ReadonlySet<string> = new Set([
  'assertion.hashedURI.mismatch',
  'hashedURI.mismatch',
  'hashedURI.missing',
  'assertion.missing',
  'assertion.inaccessible',
  'assertion.undeclared',
  'assertion.outsideManifest',
  'assertion.cbor.invalid',
  'assertion.json.invalid',
  'assertion.required.missing',
  'assertion.multipleHardBindings',
  'assertion.notRedacted',
  'assertion.selfRedacted',
  'assertion.action.malformed',
  'assertion.action.ingredientMismatch',
  'assertion.action.redactionMismatch',
  'assertion.action.redacted',
  'assertion.ingredient.malformed',
  'assertion.metadata.disallowed',
  'assertion.timestamp.malformed',
  'assertion.cloud-data.hardBinding',
  'assertion.cloud-data.actions',
  'assertion.cloud-data.malformed',
  'assertion.dataHash.malformed',
  'assertion.dataHash.redacted',
  'assertion.bmffHash.malformed',
  'assertion.boxesHash.malformed',
  'assertion.collectionHash.malformed',
  'assertion.collectionHash.invalidURI',
  'claim.missing',
  'claim.multiple',
  'claim.malformed',
  'claim.cbor.invalid',
  'claim.required.missing',
  'claim.hardBindings.missing',
  'manifest.multipleParents',
  'manifest.update.invalid',
  'manifest.update.wrongParents',
  'manifest.timestamp.invalid',
  'manifest.timestamp.wrongParents',
  'manifest.compressed.invalid',
  'manifest.inaccessible',
  'ingredient.hashedURI.mismatch',
  'ingredient.manifest.missing',
  'ingredient.manifest.mismatch',
  'ingredient.claimSignature.missing',
  'ingredient.claimSignature.mismatch',
  'general.error',
]);

/** The claim is intact but the bytes it is bound to changed → manifest_content_modified. */
export const HARD_BINDING_FAILURES: ReadonlySet<string> = new Set([
  'assertion.dataHash.mismatch',
  'assertion.bmffHash.mismatch',
  'assertion.boxesHash.mismatch',
  'assertion.boxesHash.unknownBox',
  'assertion.collectionHash.mismatch',
  'assertion.collectionHash.incorrectFileCount',
]);

export const TRUSTED = 'signingCredential.trusted';
export const UNTRUSTED = 'signingCredential.untrusted';
/** Certificate not valid at the time-stamp time, or now when there is no time-stamp. */
export const EXPIRED: ReadonlySet<string> = new Set(['signingCredential.expired', 'claimSignature.outsideValidity']);
export const OCSP_REVOKED = 'signingCredential.ocsp.revoked';
export const OCSP_GOOD = 'signingCredential.ocsp.notRevoked';
export const OCSP_UNKNOWN = 'signingCredential.ocsp.unknown';
export const OCSP_UNAVAILABLE: ReadonlySet<string> = new Set([
  'signingCredential.ocsp.skipped',
  'signingCredential.ocsp.inaccessible',
]);
export const TIMESTAMP_VALIDATED = 'timeStamp.validated';
export const TIMESTAMP_TRUSTED = 'timeStamp.trusted';
export const TIMESTAMP_BAD: ReadonlySet<string> = new Set([
  'timeStamp.mismatch',
  'timeStamp.malformed',
  'timeStamp.outsideValidity',
]);

/** The verdict booleans of a ManifestReading: types.ts documents each field once. */
export type CodeVerdict = Pick<
  ManifestReading,
  | 'signatureValid'
  | 'assertionsValid'
  | 'hardBindingValid'
  | 'trusted'
  | 'certificateExpired'
  | 'revoked'
  | 'ocspStatus'
  | 'timestamped'
  | 'timestampTrusted'
>;

/** Turns the active manifest's entries into the booleans the status decision reads. */
export function judgeCodes(entries: readonly ValidationEntry[], validationState: string): CodeVerdict {
  const active = entries.filter((e) => e.scope === 'active');
  const failed = new Set(active.filter((e) => e.kind === 'failure').map((e) => e.code));
  const seen = new Set(active.map((e) => e.code));
  const anyFailed = (set: ReadonlySet<string>): boolean => [...failed].some((code) => set.has(code));

  let ocspStatus: OcspStatus = 'not_checked';
  if (seen.has(OCSP_REVOKED)) ocspStatus = 'revoked';
  else if (seen.has(OCSP_GOOD)) ocspStatus = 'good';
  else if (seen.has(OCSP_UNKNOWN)) ocspStatus = 'unknown';
  else if ([...seen].some((code) => OCSP_UNAVAILABLE.has(code))) ocspStatus = 'unavailable';

  const timestampOk = seen.has(TIMESTAMP_VALIDATED) && ![...seen].some((code) => TIMESTAMP_BAD.has(code));
  return {
    signatureValid: !anyFailed(SIGNATURE_FAILURES),
    assertionsValid: !anyFailed(ASSERTION_FAILURES),
    hardBindingValid: !anyFailed(HARD_BINDING_FAILURES),
    // An explicit trusted code, or c2pa-rs's overall Trusted state; an untrusted failure always wins.
    trusted: !failed.has(UNTRUSTED) && (seen.has(TRUSTED) || validationState === 'Trusted'),
    certificateExpired: anyFailed(EXPIRED),
    revoked: ocspStatus === 'revoked',
    ocspStatus,
    timestamped: timestampOk,
    timestampTrusted: timestampOk && seen.has(TIMESTAMP_TRUSTED),
  };
}
