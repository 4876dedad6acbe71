import { sql } from 'drizzle-orm';
import { pgPolicy, type PgColumn } from 'drizzle-orm/pg-core';
import type { NodePgDatabase } from 'drizzle-orm/node-postgres';

export type Database = NodePgDatabase<Record<string, never>>;
export type Tx = Parameters<Parameters<Database['transaction']>[0]>[0];

/**
 * Session settings that row-level security policies read. `cairn.tenant_id` scopes every tenant-owned row;
 * the others open exactly one row to a caller that already holds its identifier (an API key's id, an
 * idempotency key, an upload session's id from its signed URL), which is how a request finds its tenant before it knows it,
 * or the rows a public lookup names (the signer's assets by id or content digest, its manifests by id or label).
 */
export type RlsSettings = Partial<
  Record<
    | 'cairn.tenant_id'
    | 'cairn.key_id'
    | 'cairn.idempotency_key'
    | 'cairn.upload_id'
    | 'cairn.asset_id'
    | 'cairn.content_sha256'
    | 'cairn.manifest_id'
    | 'cairn.manifest_label',
    string
  >
>;

/** Runs `fn` in a transaction whose RLS settings are `settings` (transaction-local: nothing leaks to the pool). */
export async function withRlsSettings<T>(db: Database, settings: RlsSettings, fn: (tx: Tx) => Promise<T>): Promise<T> {
  return db.transaction(async (tx) => {
    for (const [name, value] of Object.entries(settings)) {
      if (value === undefined) continue;
      await tx.execute(sql`select set_config(${name}, ${value}, true)`);
    }
    return fn(tx);
  });
}

/** Runs `fn` as tenant `tenantId`: the only tenant rows it can read or write are that tenant's. */
export function withTenant<T>(db: Database, tenantId: string, fn: (tx: Tx) => Promise<T>): Promise<T> {
  return withRlsSettings(db, { 'cairn.tenant_id': tenantId }, fn);
}

/** Switches the tenant inside a transaction already opened by withTenant/withRlsSettings. */
export async function setTenant(tx: Tx, tenantId: string): Promise<void> {
  await tx.execute(sql`select set_config('cairn.tenant_id', ${tenantId}, true)`);
}

/** The policy of a tenant-owned table: a row is read and written only while `cairn.tenant_id` is its tenant. */
export function tenantPolicy(name: string, tenantId: PgColumn) {
  return pgPolicy(name, {
    for: 'all',
    using: sql`${tenantId} = current_setting('cairn.tenant_id', true)`,
    withCheck: sql`${tenantId} = current_setting('cairn.tenant_id', true)`,
  });
}

/** The SQL predicate RLS policies use for tenant ownership. */
export const tenantPredicate = (column = 'tenant_id') =>
  sql.raw(`${column} = current_setting('cairn.tenant_id', true)`);

/** The row a read by key answers, or null when there is none. */
export async function rowOrNull<T>(rows: PromiseLike<T[]>): Promise<T | null> {
  return (await rows)[0] ?? null;
}
