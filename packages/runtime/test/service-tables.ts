/**
 * The SQL of what a service's outbox and its consumers need (packages/db events.ts), under a schema of the service's
 * name: the first statements of a test service's migration.
 */
export function outboxTablesSql(schema: string): string {
  return (
    `CREATE SCHEMA IF NOT EXISTS "${schema}";\n--> statement-breakpoint\n` +
    `CREATE TABLE "${schema}"."processed_events" ("consumer" text NOT NULL, "event_id" text NOT NULL, ` +
    '"processed_at" timestamptz DEFAULT now() NOT NULL, PRIMARY KEY ("consumer", "event_id"));\n' +
    '--> statement-breakpoint\n' +
    `CREATE TABLE "${schema}"."outbox" ("seq" bigserial PRIMARY KEY, "event_id" text NOT NULL UNIQUE, ` +
    '"subject" text NOT NULL, "envelope" jsonb NOT NULL, "headers" jsonb DEFAULT \'{}\'::jsonb NOT NULL, ' +
    '"created_at" timestamptz DEFAULT now() NOT NULL, "published_at" timestamptz);\n'
  );
}
