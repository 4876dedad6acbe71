import type { AnyEvent } from '@cairn/events';
import type { Tx } from '@cairn/db';
import { recordEvent } from './app/chain.js';
import type { ChainEntries } from './app/ports.js';

/** Durable consumer name of the audit log (one per purpose, stable across deploys). */
export const AUDIT_LOG_CONSUMER = 'audit-log';
/** The audit log reads every event; app/chain.ts keeps the ones domain/policy.ts audits. */
export const AUDIT_LOG_TYPES = 'all';

/** The audit log's consumer: one chained entry per audited event, in the consumer's idempotent transaction. */
export function auditLogHandler(entries: ChainEntries): (event: AnyEvent, tx: Tx) => Promise<void> {
  return (event, tx) => recordEvent(entries, event, tx);
}
