export {
  CairnClient,
  CairnApiError,
  retryAfterMs,
  type ClientOptions,
  type SignOptions,
  type VerifyInput,
  type AuditQuery,
  type WebhookInput,
  type FileInput,
  type FileSource,
  type UploadOptions,
} from './client.js';
export type { UploadProgress, ProgressListener } from './body.js';
export { verifyWebhookSignature, type HeaderSource } from './webhook-signature.js';
export type * from './types.js';
