import { sql } from 'drizzle-orm';
import { jsonb, text, timestamp, bigserial, type PgSchema, primaryKey } from 'drizzle-orm/pg-core';
import { withTenant, type Database, type Tx } from './tenant.js';

/**
 * `processed_events`: which events a consumer has already applied. Inserting the id in the same transaction
 * as the consumer's effects makes a redelivered event a no-op.
 */
export function processedEventsTable(schema: PgSchema) {
  return schema.table(
    'processed_events',
    {
      consumer: text('consumer').notNull(),
      eventId: text('event_id').notNull(),
      processedAt: timestamp('processed_at', { withTimezone: true }).notNull().defaultNow(),
    },
    (t) => [primaryKey({ columns: [t.consumer, t.eventId] })],
  );
}

/**
 * `outbox`: events written in the same transaction as the change they announce, relayed to JetStream
 * afterwards, so a crash between commit and publish loses nothing.
 */
export function outboxTable(schema: PgSchema) {
  return schema.table('outbox', {
    seq: bigserial('seq', { mode: 'number' }).primaryKey(),
    eventId: text('event_id').notNull().unique(),
    subject: text('subject').notNull(),
    envelope: jsonb('envelope').notNull(),
    headers: jsonb('headers').$type<Record<string, string>>().notNull().default({}),
    createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
    publishedAt: timestamp('published_at', { withTimezone: true }),
  });
}

/** Claims `eventId` for `consumer`; false when it was processed before (the caller skips its effects). */
export async function claimEvent(tx: Tx, schemaName: string, consumer: string, eventId: string): Promise<boolean> {
  const result = await tx.execute(
    sql`insert into ${sql.identifier(schemaName)}.processed_events (consumer, event_id) values (${consumer}, ${eventId}) on conflict do nothing returning event_id`,
  );
  return result.rows.length === 1;
}

/**
 * A DedupeStore (see @cairn/bus) over a service's processed_events table: the consumer's effects and the
 * event id commit together, as the event's tenant (so RLS applies to whatever the consumer writes).
 */
export function pgDedupeStore(db: Database, schemaName: string) {
  return {
    async once(
      consumer: string,
      event: { event_id: string; tenant_id: string },
      apply: (tx: Tx) => Promise<void>,
    ): Promise<'applied' | 'duplicate'> {
      return withTenant(db, event.tenant_id, async (tx) => {
        if (!(await claimEvent(tx, schemaName, consumer, event.event_id))) return 'duplicate';
        await apply(tx);
        return 'applied';
      });
    },
  };
}
