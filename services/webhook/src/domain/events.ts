import { createHmac } from 'node:crypto';
import type { AnyEvent, EventType } from '@cairn/events';

/** Events a tenant may subscribe to: the union of the spec's variant A and variant B sets. */
export const WEBHOOK_EVENTS = [
  'job.completed',
  'job.failed',
  'anchor.confirmed',
  'billing.quota_warning',
  'billing.quota_exceeded',
  'key.expiring',
  'manifest.signed',
  'verification.completed',
  'certificate.expiring',
] as const satisfies ReadonlyArray<EventType>;

export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** The body's shape, chosen per endpoint: the spec's variant A (`event_id`, `type`, ...) or B (`event`, ...). */
export type PayloadFormat = 'a' | 'b';
const SUBSCRIBABLE = new Set<string>(WEBHOOK_EVENTS);

export function isWebhookEvent(type: string): type is WebhookEvent {
  return SUBSCRIBABLE.has(type);
}

/** Delay before attempt 1..5 (spec, variant A): immediate, 30 s, 5 min, 30 min, 2 h. */
export const RETRY_DELAYS_MS = [0, 30_000, 5 * 60_000, 30 * 60_000, 2 * 3600_000] as const;
export const MAX_ATTEMPTS = RETRY_DELAYS_MS.length;

/** Delay before the attempt that follows `failedAttempts` failures, scaled; undefined when none is left. */
export function retryDelayMs(failedAttempts: number, scale: number): number | undefined {
  const base = RETRY_DELAYS_MS[failedAttempts];
  return base === undefined ? undefined : Math.round(base * scale);
}

const KEY_ORDER: Record<PayloadFormat, readonly string[]> = {
  a: ['event_id', 'type', 'created_at', 'data'],
  b: ['event', 'occurred_at', 'data'],
};

/** The body a receiver gets, from the event envelope: variant A or B, chosen per endpoint. */
export function buildPayload(event: AnyEvent, format: PayloadFormat): Record<string, unknown> {
  return format === 'a'
    ? { event_id: event.event_id, type: event.type, created_at: event.created_at, data: event.data }
    : { event: event.type, occurred_at: event.created_at, data: event.data };
}

/** The raw body sent: the payload's top-level keys in the documented order (jsonb storage does not keep it). */
export function renderBody(payload: Record<string, unknown>): string {
  const format: PayloadFormat = 'event_id' in payload ? 'a' : 'b';
  const ordered: Record<string, unknown> = {};
  for (const key of KEY_ORDER[format]) if (key in payload) ordered[key] = payload[key];
  return JSON.stringify(ordered);
}

/**
 * `sha256=<hex HMAC-SHA256(raw body, secret)>`, sent in Cairn-Signature and X-Cairn-Signature: one value, as the
 * spec writes it, except during a secret rotation's overlap, when each secret's signature is given, comma-separated,
 * the current secret's first. A receiver accepts the request when any of them is its secret's.
 */
export function signatureHeader(body: string | Buffer, secrets: readonly string[]): string {
  return secrets.map((secret) => 'sha256=' + createHmac('sha256', secret).update(body).digest('hex')).join(',');
}
