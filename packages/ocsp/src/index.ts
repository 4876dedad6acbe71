export {
  checkOcsp,
  ocspUrlsOfCertificate,
  PUBLIC_ONLY,
  type OcspCheckResult,
  type OcspCheckStatus,
  type OcspCheckOptions,
} from './client.js';
export * from './common.js';
