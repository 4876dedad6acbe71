import type { AnyEvent, EventType } from '@cairn/events';

/**
 * What the audit log records: the spec's audit events (metered work and failed webhooks) and the
 * administrative facts (docs/decisions/0040-admin-changes-audited.md). Verification is recorded only when
 * authenticated: a public verify has no tenant and must leave no personal trace.
 */
export const AUDITED_TYPES = [
  'asset.signed',
  'asset.verified',
  'asset.lookup',
  'webhook.failed',
  'tenant.created',
  'key.created',
  'key.revoked',
  'settings.changed',
  'admin.changed',
] as const satisfies ReadonlyArray<EventType>;

const AUDITED: ReadonlySet<EventType> = new Set(AUDITED_TYPES);

export function isAudited(event: Pick<AnyEvent, 'type' | 'tenant_id'>): boolean {
  return AUDITED.has(event.type) && event.tenant_id.startsWith('t_');
}
