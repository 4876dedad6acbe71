export { checkOcsp, ocspUrlsOfCertificate, type OcspCheckResult, type OcspCheckStatus, type OcspCheckOptions } from './client.js';
export * from './common.js';
