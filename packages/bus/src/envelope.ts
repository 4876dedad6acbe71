import { z } from 'zod';
import { newId } from '@cairn/ids';

/** Every event type Cairn publishes: docs/design.md's list plus the administrative facts the audit log records. */
export const EVENT_TYPES = [
  'asset.signed',
  'asset.verified',
  'asset.lookup',
  'job.completed',
  'job.failed',
  'anchor.confirmed',
  'billing.quota_warning',
  'billing.quota_exceeded',
  'billing.spending_cap_warning',
  'key.expiring',
  'manifest.signed',
  'verification.completed',
  'certificate.expiring',
  'certificate.revoked',
  'webhook.failed',
  'tenant.created',
  'key.created',
  'key.revoked',
  'settings.changed',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

export const eventEnvelopeSchema = z.object({
  event_id: z.string().startsWith('evt_'),
  type: z.enum(EVENT_TYPES),
  tenant_id: z.string(),
  created_at: z.string().datetime(),
  data: z.record(z.string(), z.unknown()),
});

export type EventEnvelope = z.output<typeof eventEnvelopeSchema>;

export function newEvent(
  type: EventType,
  tenantId: string,
  data: Record<string, unknown>,
  now = new Date(),
): EventEnvelope {
  return { event_id: newId('event'), type, tenant_id: tenantId, created_at: now.toISOString(), data };
}
