import { drizzle } from 'drizzle-orm/node-postgres';
import { migrate } from 'drizzle-orm/node-postgres/migrator';
import pg from 'pg';
import type { Database } from './tenant.js';

export function createPool(url: string, max = 10): pg.Pool {
  const pool = new pg.Pool({ connectionString: url, max, connectionTimeoutMillis: 5000, idleTimeoutMillis: 30000 });
  // An idle client losing its connection must not crash the process; the pool replaces it.
  pool.on('error', () => undefined);
  // pg-pool takes its own error listener off a client while it is checked out (a transaction, a migration), so a
  // connection cut then (Postgres restarting) would be an unhandled 'error' event and kill the process. The query
  // in flight is rejected all the same, so its caller sees the failure (503 cairn.unavailable).
  pool.on('connect', (client) => client.on('error', () => undefined));
  const connect = pool.connect.bind(pool);
  pool.connect = ((callback?: Parameters<typeof connect>[0]) =>
    callback ? connect(callback) : connect().then(releasedWhenLost)) as typeof pool.connect;
  return pool;
}

/**
 * A checked-out client whose connection is lost goes back to the pool (which drops it) at once, and its holder's
 * own release later is a no-op. drizzle's transaction() sends BEGIN outside its try/finally: when BEGIN fails
 * (Postgres restarting) it never releases the client, which then stayed checked out forever, one pool slot lost
 * each time, and pool.end() (a service's shutdown) never finished (issue #11, test/dependency-restarts.test.ts).
 */
function releasedWhenLost(client: pg.PoolClient): pg.PoolClient {
  const release = client.release.bind(client);
  let released = false;
  const lost = () => {
    released = true;
    release(new Error('connection lost while checked out'));
  };
  client.once('end', lost);
  client.release = (error?: Error | boolean) => {
    client.removeListener('end', lost);
    if (released) return;
    released = true;
    release(error);
  };
  return client;
}

export function createDb(pool: pg.Pool): Database {
  return drizzle(pool);
}

/**
 * Applies a service's migrations. Each service keeps its own journal table so nine services can share a
 * database, and an advisory lock keyed by the service name serialises replicas starting together.
 */
export async function migrateService(pool: pg.Pool, service: string, migrationsFolder: string): Promise<void> {
  const client = await pool.connect();
  try {
    // The journals' shared schema first, under one fleet-wide lock: nine services starting against a fresh
    // database would otherwise race on CREATE SCHEMA IF NOT EXISTS (not concurrency-safe in Postgres).
    await client.query("select pg_advisory_lock(hashtext('cairn.migrate'))");
    try {
      await client.query('create schema if not exists cairn_migrations');
    } finally {
      await client.query("select pg_advisory_unlock(hashtext('cairn.migrate'))");
    }
    await client.query('select pg_advisory_lock(hashtext($1))', [`cairn.migrate.${service}`]);
    try {
      await migrate(drizzle(client), {
        migrationsFolder,
        migrationsSchema: 'cairn_migrations',
        migrationsTable: service,
      });
    } finally {
      await client.query('select pg_advisory_unlock(hashtext($1))', [`cairn.migrate.${service}`]);
    }
  } finally {
    client.release();
  }
}

/** Readiness probe: one round trip. */
export async function pingDatabase(pool: pg.Pool): Promise<void> {
  await pool.query('select 1');
}
