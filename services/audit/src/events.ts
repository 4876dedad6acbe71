import type { AnyEvent } from '@cairn/events';
import type { Tx } from '@cairn/db';
import { recordEvent } from './app/chain.js';
import { AUDITED_TYPES } from './domain/policy.js';
import type { ChainEntries } from './app/ports.js';

/** Durable consumer name of the audit log (one per purpose, stable across deploys). */
export const AUDIT_LOG_CONSUMER = 'audit-log';
/**
 * The types domain/policy.ts audits (the bus acknowledges every other type unread, so an event the log never keeps
 * costs it no transaction); app/chain.ts also leaves out those without a tenant.
 */
export const AUDIT_LOG_TYPES = AUDITED_TYPES;

/** The audit log's consumer: one chained entry per audited event, in the consumer's idempotent transaction. */
export function auditLogHandler(entries: ChainEntries): (event: AnyEvent, tx: Tx) => Promise<void> {
  return (event, tx) => recordEvent(entries, event, tx);
}
