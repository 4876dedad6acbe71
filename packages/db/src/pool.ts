import { drizzle } from 'drizzle-orm/node-postgres';
import { migrate } from 'drizzle-orm/node-postgres/migrator';
import pg from 'pg';
import type { Database } from './tenant.js';

export function createPool(url: string, max = 10): pg.Pool {
  // Connections a burst opened beyond `min` close after 30 s idle; `min` stay open, so the background loops of an
  // idle service (outbox sweep, schedulers waking every few seconds to a minute) reuse a connection instead of
  // opening a new backend (fork, authentication) for each look.
  const pool = new pg.Pool({
    connectionString: url,
    max,
    min: Math.min(2, max),
    connectionTimeoutMillis: 5000,
    idleTimeoutMillis: 30000,
  });
  // An idle client losing its connection must not crash the process; the pool replaces it.
  pool.on('error', () => undefined);
  // pg-pool takes its own error listener off a client while it is checked out (a transaction, a migration), so a
  // connection cut then (Postgres restarting) would be an unhandled 'error' event and kill the process. The query
  // in flight is rejected all the same, so its caller sees the failure (503 cairn.unavailable).
  pool.on('connect', (client) => client.on('error', () => undefined));
  const connect = pool.connect.bind(pool);
  pool.connect = ((callback?: Parameters<typeof connect>[0]) =>
    callback ? connect(callback) : connect().then(releasedWhenLost)) as typeof pool.connect;
  const held = new Set<pg.PoolClient>();
  pool.on('acquire', (client) => held.add(client));
  pool.on('release', (_error: Error | undefined, client: pg.PoolClient) => held.delete(client));
  checkedOut.set(pool, held);
  return pool;
}

/** The clients each pool has lent out right now, for closePool to cut. */
const checkedOut = new WeakMap<pg.Pool, Set<pg.PoolClient>>();

/** pg sets it from the server's BackendKeyData; @types/pg does not declare it. */
type WithBackendPid = pg.PoolClient & { processID?: number | null };

/**
 * Ends a pool at shutdown without waiting on work that will never finish. New checkouts are refused at once
 * (pg-pool's own `ending`), clients still lent out get `settleMs` to come back (a commit in flight), then their
 * server sessions are terminated and their connections closed: pool.end() alone waits for every lent client, so
 * a handler abandoned by its consumer (stuck on a lock, a sleep, a peer that never answers) held the shutdown
 * forever, and its open transaction kept its row locks, so the replica the event was handed back to blocked
 * on them. Closing the socket is not enough for that: a backend busy in a query does not read it. Answers how
 * many clients were cut.
 */
export async function closePool(pool: pg.Pool, settleMs: number): Promise<number> {
  const ended = pool.end();
  if (await within(ended, settleMs)) return 0;
  const held = [...(checkedOut.get(pool) ?? [])] as WithBackendPid[];
  const pids = held.map((client) => client.processID).filter((pid): pid is number => typeof pid === 'number');
  await terminateBackends(pool.options, pids).catch(() => undefined); // Postgres away: the sockets below go all the same
  for (const client of held) await client.end().catch(() => undefined);
  // Each cut client is released by its 'end' (releasedWhenLost) or its failed query; bounded all the same.
  await within(ended, settleMs);
  return held.length;
}

async function within(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
  const settled = promise.then(
    () => true,
    () => true,
  );
  try {
    return await Promise.race([settled, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** A role may terminate its own sessions; one short connection of the pool's own settings does it. */
async function terminateBackends(options: pg.PoolOptions, pids: number[]): Promise<void> {
  if (pids.length === 0) return;
  const client = new pg.Client({ ...options, connectionTimeoutMillis: 2000 });
  await client.connect();
  try {
    await client.query('select pg_terminate_backend(pid) from unnest($1::int[]) as pid', [pids]);
  } finally {
    await client.end();
  }
}

/**
 * A checked-out client whose connection is lost goes back to the pool (which drops it) at once, and its holder's
 * own release later is a no-op. drizzle's transaction() sends BEGIN outside its try/finally: when BEGIN fails
 * (Postgres restarting) it never releases the client, which then stayed checked out forever, one pool slot lost
 * each time, and pool.end() (a service's shutdown) never finished (docs/decisions/0018-bounded-shutdown.md,
 * test/dependency-restarts.test.ts).
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
