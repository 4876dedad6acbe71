import { createHash } from 'node:crypto';

/** prev_hash of a tenant's first entry (and of a chain whose every entry was purged without a checkpoint). */
export const GENESIS_HASH = '0'.repeat(64);

/** The fields an entry's hash covers: everything that states what happened, to whom, when, and its place. */
export interface ChainedFields {
  tenantId: string;
  seq: number;
  entryId: string;
  eventId: string;
  eventType: string;
  occurredAt: Date;
  data: unknown;
}

/** JSON with object keys sorted at every depth: the same value always serializes to the same bytes. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map((v) => canonicalJson(v)).join(',')}]`;
  const record = value as Record<string, unknown>;
  const keys = Object.keys(record)
    .filter((k) => record[k] !== undefined)
    .sort();
  return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson(record[k])}`).join(',')}}`;
}

/** hex SHA-256 over `prevHash` + "\n" + the entry's canonical serialization. */
export function entryHash(fields: ChainedFields, prevHash: string): string {
  const body = canonicalJson({
    tenant_id: fields.tenantId,
    seq: fields.seq,
    entry_id: fields.entryId,
    event_id: fields.eventId,
    event_type: fields.eventType,
    occurred_at: fields.occurredAt.toISOString(),
    data: fields.data,
  });
  return createHash('sha256').update(prevHash).update('\n').update(body).digest('hex');
}
