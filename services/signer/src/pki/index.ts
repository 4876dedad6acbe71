// The signer's PKI: what the service wiring and the signing pipeline import.
export { pkiConfigShape, pkiSettingsFromConfig, resolveKek, type PkiConfig, type PkiSettings } from './config.js';
export {
  CertificateAuthority,
  type CertificateAuthorityDeps,
  type CertificateInfo,
  type EnqueueEvent,
  type PkiLogger,
  type PkiOverview,
  type RevokeResult,
  type RotationResult,
} from './certificates.js';
export { startPkiMaintenance, type PkiMaintenance, type PkiMaintenanceOptions } from './maintenance.js';
export {
  SoftwareKeyBackend,
  Pkcs11KeyBackend,
  generatePkcs11SigningKey,
  destroyPkcs11Key,
  closePkcs11,
  type ActiveSigningKey,
  type KeyBackend,
  type Pkcs11Config,
} from './keys.js';
export {
  createC2paSigner,
  c2paSignerFailure,
  signWithC2pa,
  c2paTrustSettings,
  type C2paSignerOptions,
} from './c2pa-signer.js';
export {
  createOcspHandler,
  startOcspServer,
  answerOcspRequest,
  type OcspServer,
  type OcspResponderDeps,
  type OcspIssuer,
  type OcspCertStatus,
} from './ocsp-responder.js';
export { createTsaHandler, answerTimeStampRequest, localTsaUrl, type TsaResponderDeps } from './tsa-responder.js';
export {
  checkOcsp,
  ocspUrlsOfCertificate,
  type OcspCheckResult,
  type OcspCheckStatus,
  type OcspCheckOptions,
} from '@cairn/ocsp';
export { REVOCATION_REASONS, isRevocationReason, type RevocationReason } from '@cairn/ocsp';
