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
} from './client.js';
export { verifyWebhookSignature, type HeaderSource } from './webhook-signature.js';
export type * from './types.js';
