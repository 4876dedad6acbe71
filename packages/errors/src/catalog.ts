// Every error Cairn answers with, by code. HTTP status and a short title per code; the detail is per occurrence.
// Codes from the API spec's table come first, then the ones Cairn adds.
export const ERROR_CATALOG = {
  'cairn.verify.no_input': { status: 400, title: 'No input to verify' },
  'cairn.verify.unsupported_file_type': { status: 415, title: 'Unsupported file type' },
  'cairn.sign.invalid_recipe': { status: 400, title: 'Invalid recipe' },
  'cairn.sign.unsupported_mime': { status: 400, title: 'Media type not allowed by the recipe' },
  'cairn.sign.missing_idempotency_key': { status: 400, title: 'Idempotency-Key header required' },
  'cairn.sign.idempotency_conflict': { status: 409, title: 'Idempotency-Key reused with a different payload' },
  // 409, as the IETF Idempotency-Key draft says for a key whose first request is still being processed
  // (docs/decisions/0019-idempotency-claims.md).
  'cairn.idempotency.in_progress': { status: 409, title: 'A request with this Idempotency-Key is still in progress' },
  'cairn.sign.file_too_large': { status: 413, title: 'Asset too large' },
  'cairn.auth.invalid_key': { status: 401, title: 'Invalid API key' },
  'cairn.auth.forbidden': { status: 403, title: 'Forbidden' },
  'cairn.billing.quota_exceeded': { status: 402, title: 'Quota exceeded' },
  'cairn.billing.spending_cap_reached': { status: 402, title: 'Spending cap reached' },
  'cairn.ratelimit.exceeded': { status: 429, title: 'Rate limit exceeded' },
  'cairn.signer.unavailable': { status: 503, title: 'Signing key service unavailable' },
  // The isolated C2PA worker died or overran its budget on this sign (docs/decisions/0025-c2pa-in-child-processes.md).
  'cairn.sign.worker_failed': { status: 503, title: 'Signing worker failed' },
  'cairn.onboard.missing_idempotency_key': { status: 400, title: 'Idempotency-Key header required' },
  'cairn.onboard.idempotency_conflict': { status: 409, title: 'Idempotency-Key reused with a different payload' },
  'cairn.onboard.browser_not_allowed': { status: 403, title: 'Onboarding is for programmatic clients' },
  'cairn.onboard.invalid_payment_method': { status: 400, title: 'Invalid payment method' },
  'cairn.onboard.payment_declined': { status: 402, title: 'Payment method declined' },
  'cairn.onboard.plan_not_available': { status: 400, title: 'Plan not available for self-onboarding' },
  'cairn.tenant.plan_not_allowed': { status: 400, title: 'Plan not allowed for a sub-tenant' },
  'cairn.tenant.subtenants_not_available': { status: 403, title: 'Plan does not include sub-tenants' },
  'cairn.tenant.spending_cap_above_parent': { status: 400, title: 'Spending cap above the parent’s' },
  'cairn.onboard.idempotency_expired': { status: 409, title: 'Idempotency-Key past its replay window' },
  'cairn.settings.out_of_range': { status: 400, title: 'Setting out of range for the plan' },
  'cairn.webhook.invalid_url': { status: 400, title: 'Webhook URL not allowed' },
  'cairn.webhook.unknown_event': { status: 400, title: 'Unknown webhook event' },
  'cairn.validation.invalid_body': { status: 400, title: 'Invalid request body' },
  'cairn.validation.body_too_large': { status: 413, title: 'Request body too large' },
  'cairn.validation.unsupported_media_type': { status: 415, title: 'Unsupported Content-Type' },
  'cairn.not_found': { status: 404, title: 'Not found' },
  // Upload sessions (docs/decisions/0016-uploads-stream-and-sessions.md): the declared size over the limit, a PUT past
  // the declared size, a URL whose signature or expiry does not check, and a session in the wrong state for what was
  // asked.
  'cairn.upload.too_large': { status: 413, title: 'Upload larger than allowed' },
  'cairn.upload.invalid_url': { status: 403, title: 'Upload URL invalid or expired' },
  'cairn.upload.already_uploaded': { status: 409, title: 'Upload already received' },
  'cairn.upload.not_uploaded': { status: 409, title: 'Upload not received yet' },
  'cairn.upload.already_used': { status: 409, title: 'Upload already used' },
  'cairn.upload.expired': { status: 410, title: 'Upload session expired' },
  'cairn.upload.quota_exceeded': { status: 429, title: 'Too many open upload sessions' },
  'cairn.upload.insufficient_storage': { status: 507, title: 'No room for this upload now' },
  'cairn.asset.expired': { status: 410, title: 'Asset no longer kept' },
  // 422, not 413: the upload's bytes were accepted; what its headers declare (pixels, duration) is refused
  // (docs/decisions/0023-media-limits-from-headers.md).
  'cairn.media.too_large': { status: 422, title: 'Media exceeds the decoding limits' },
  'cairn.method_not_allowed': { status: 405, title: 'Method not allowed' },
  'cairn.validation.query_too_long': { status: 414, title: 'Query value too long; send it in a POST body' },
  'cairn.resolution.fetch_failed': { status: 502, title: 'The referenced asset could not be fetched' },
  'cairn.resolution.quota_exceeded': { status: 429, title: 'Stored manifest quota reached' },
  'cairn.resolution.binding_exists': { status: 409, title: 'Soft binding value already bound' },
  'cairn.not_implemented': { status: 501, title: 'Not implemented' },
  'cairn.unavailable': { status: 503, title: 'Service temporarily unavailable' },
  'cairn.internal_error': { status: 500, title: 'Internal error' },
} as const satisfies Record<string, { status: number; title: string }>;

export type ErrorCode = keyof typeof ERROR_CATALOG;

export function isErrorCode(value: string): value is ErrorCode {
  return Object.hasOwn(ERROR_CATALOG, value);
}
