import type { ErrorCode } from './catalog.js';

/**
 * What a client should do about each code: the "what to do" column of the error catalogue page that every
 * problem `type` URL points at. Keyed by string, not ErrorCode, so a code added to the catalog before its advice
 * is written still gets a page anchor (with advice by HTTP status) instead of breaking the build.
 */
const GUIDANCE: Readonly<Record<string, string>> = {
  'cairn.verify.no_input':
    'Send exactly one input: a file in the multipart field "file", or JSON {"asset_id"} or {"manifest_uri"}. An empty file counts as none.',
  'cairn.verify.unsupported_file_type':
    'Verify an image (JPEG, PNG, WebP, …), audio, video or text file; the type is read from the bytes, not the name.',
  'cairn.sign.invalid_recipe': 'Name a recipe your tenant has (GET /v1/recipes lists them) in the "recipe" field.',
  'cairn.sign.unsupported_mime':
    'The file’s type (read from its bytes) is not one the recipe allows: pick a recipe for that media type or convert the file.',
  'cairn.sign.missing_idempotency_key':
    'Send an Idempotency-Key header (a fresh UUID per logical request; reuse it only to retry that request).',
  'cairn.sign.idempotency_conflict':
    'This Idempotency-Key was used with a different file or fields. Use a new key for a new request.',
  'cairn.idempotency.in_progress':
    'The first request with this Idempotency-Key is still running: wait (Retry-After) and retry with the same key to get its answer.',
  'cairn.sign.file_too_large': 'The file is above the upload limit: send a smaller file.',
  'cairn.auth.invalid_key':
    'Send a valid API key as "Authorization: Bearer <key>". Keys can be revoked or expire: make a new one with an admin key.',
  'cairn.auth.forbidden':
    'The key lacks the scope or plan this needs: use a key with that scope (admin, sign, verify, read) or upgrade the plan.',
  'cairn.billing.quota_exceeded':
    'The plan’s monthly quota is used up: upgrade the plan or wait for the next billing period (GET /v1/usage shows where you are).',
  'cairn.billing.spending_cap_reached':
    'The tenant’s spending cap is reached: raise the cap in the tenant settings or wait for the next period.',
  'cairn.ratelimit.exceeded':
    'Too many requests: wait the Retry-After seconds, then retry with backoff. RateLimit-* headers show the budget.',
  'cairn.signer.unavailable':
    'The signing key service is briefly unavailable: retry after a short wait with the same Idempotency-Key.',
  'cairn.sign.worker_failed':
    'The signing worker failed on this file: retry once with the same Idempotency-Key; if it repeats, the file may be malformed.',
  'cairn.onboard.missing_idempotency_key':
    'Send an Idempotency-Key header with the onboarding request, and reuse it to retry.',
  'cairn.onboard.idempotency_conflict':
    'This Idempotency-Key was used for a different onboarding request: use a new key.',
  'cairn.onboard.browser_not_allowed': 'Onboard from a program (curl, the SDK or the CLI), not from a browser page.',
  'cairn.onboard.invalid_payment_method': 'Send a valid payment method id from the payment processor for a paid plan.',
  'cairn.onboard.payment_declined': 'The payment method was declined: use another one.',
  'cairn.onboard.plan_not_available':
    'Pick a self-service plan (free, developer, growth); the others are arranged with sales.',
  'cairn.tenant.plan_not_allowed': 'A sub-tenant’s plan cannot be above its parent’s: pick a plan the parent allows.',
  'cairn.tenant.subtenants_not_available': 'Sub-tenants need a plan that includes them: upgrade the parent tenant.',
  'cairn.tenant.spending_cap_above_parent': 'Set the sub-tenant’s spending cap at or below the parent’s.',
  'cairn.onboard.idempotency_expired':
    'The key’s replay window has passed: start a new onboarding with a new Idempotency-Key.',
  'cairn.settings.out_of_range':
    'A setting is outside what the plan allows: the detail names it and the allowed range.',
  'cairn.webhook.invalid_url':
    'Use a public https URL for the webhook endpoint (no private, loopback or link-local addresses).',
  'cairn.webhook.unknown_event': 'Subscribe only to event types Cairn sends (the API reference lists them).',
  'cairn.validation.invalid_body':
    'The request body or a field is invalid: the "errors" array names each field and what is wrong.',
  'cairn.validation.body_too_large': 'The body is larger than this endpoint accepts: send a smaller file or body.',
  'cairn.validation.unsupported_media_type':
    'Send the Content-Type the endpoint expects (application/json, or multipart/form-data for files).',
  'cairn.not_found':
    'Nothing by that id or path is visible to this key: check the id and that it belongs to your tenant.',
  'cairn.upload.too_large':
    'The upload is larger than allowed: declare a size within max_bytes (POST /v1/uploads) and PUT no more bytes than declared.',
  'cairn.upload.invalid_url':
    'The upload URL was altered or has expired: create a new session with POST /v1/uploads and PUT to its upload_url unchanged.',
  'cairn.upload.already_uploaded':
    'This session already received its file; an upload URL takes one PUT. Create a new session for another file.',
  'cairn.upload.not_uploaded':
    'PUT the file to the session’s upload_url before naming its upload_id in a sign or verify.',
  'cairn.upload.already_used':
    'An upload is signed or verified once and then deleted: upload the file again in a new session (a sign retried with its own Idempotency-Key gets its recorded answer instead).',
  'cairn.upload.expired':
    'The session passed its expires_at and its file was deleted: create a new session and upload again.',
  'cairn.upload.quota_exceeded':
    'Your plan keeps a bounded number of upload sessions (and declared bytes) open at once: sign or verify the uploads you have, or let them expire, then create the next.',
  'cairn.upload.insufficient_storage':
    'Cairn has no room for a file of this size at the moment: retry later, or upload a smaller file.',
  'cairn.asset.expired':
    'The signed file is past its retention period and no longer kept; its manifest and verdict may still be available.',
  'cairn.media.too_large':
    'The file declares more pixels or a longer duration than Cairn decodes: downscale or shorten it.',
  'cairn.method_not_allowed': 'Use an HTTP method the endpoint supports.',
  'cairn.validation.query_too_long': 'Send the value in a POST body instead of the query string.',
  'cairn.resolution.fetch_failed':
    'Check that the referenceUrl is a public https URL that answers the asset itself (no redirect to a private address), within assetLength bytes; or upload the asset to POST /c2pa/v1/matches/byContent.',
  'cairn.resolution.quota_exceeded':
    'Delete stored manifests you no longer need (DELETE /c2pa/v1/manifests/{id}), or ask the operator for a larger STORED_MANIFESTS_MAX_PER_TENANT.',
  'cairn.resolution.binding_exists':
    'This value is already bound to another of your manifests: move it with PUT /c2pa/v1/bindings.',
  'cairn.not_implemented': 'This feature is not available on this deployment.',
  'cairn.unavailable': 'A dependency is briefly unavailable: retry after the Retry-After seconds, with backoff.',
  'cairn.internal_error':
    'Something failed on Cairn’s side and was logged: retry later, and quote the request_id if you contact support.',
};

/** The advice for `code`; a code without its own falls back on what its HTTP status class means. */
export function errorGuidance(code: ErrorCode, status: number): string {
  const own = GUIDANCE[code];
  if (own) return own;
  if (status === 429 || status >= 500) return 'Retry later with backoff, honouring Retry-After when present.';
  return 'The request cannot be served as sent: read the detail, fix the request and send it again.';
}
