import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createDatabase, databaseUrl as appDatabaseUrl, dropDatabase, ensureAppRole } from './provisioning.js';
import pg from 'pg';
import { Redis } from 'ioredis';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';

export const PG_ADMIN_URL = process.env.PG_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
export const APP_ROLE = process.env.CAIRN_DB_ROLE ?? 'cairn';
export const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
export const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
export const TEST_DB_PREFIX = 'cairn_test_';

/**
 * One isolated world per test file: its own database (owned by the non-superuser app role, so RLS applies),
 * JetStream stream and subject prefix, and Redis key prefix. Parallel workers and reruns never meet.
 */
export interface Sandbox {
  id: string;
  databaseName: string;
  databaseUrl: string;
  env: NodeJS.ProcessEnv;
  /**
   * A superuser connection to this sandbox's database, connected: what a test reads and arranges behind the
   * services' backs (row-level security does not apply to it). The caller ends it.
   */
  adminClient(): Promise<pg.Client>;
  dispose(): Promise<void>;
}

export async function createSandbox(overrides: NodeJS.ProcessEnv = {}): Promise<Sandbox> {
  const id = `${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  const databaseName = `${TEST_DB_PREFIX}${id}`;
  // The benches build sandboxes without jest's global setup, so on a fresh machine the role may not exist yet.
  await ensureAppRole(PG_ADMIN_URL, APP_ROLE);
  await createDatabase(PG_ADMIN_URL, databaseName, APP_ROLE);
  const databaseUrl = appDatabaseUrl(PG_ADMIN_URL, databaseName, APP_ROLE);
  const blobRoot = join(tmpdir(), `cairn-test-blobs-${id}`);
  // The OCSP responder's URL is written into certificates at issue time, so its port is fixed up front.
  const ocspPort = await freePort();
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    CAIRN_ENV: 'development',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    DATABASE_URL: databaseUrl,
    DATABASE_POOL_MAX: '5',
    REDIS_URL,
    REDIS_KEY_PREFIX: `test:${id}:`,
    NATS_URL,
    NATS_STREAM: `TEST_${id}`,
    NATS_SUBJECT_PREFIX: `t_${id}`,
    // NATS reserves each stream's size at creation: many sandboxes at once must fit the server's storage.
    NATS_STREAM_MAX_BYTES: String(64 * 1024 ** 2),
    GRPC_HOST: '127.0.0.1',
    GRPC_PORT: '0',
    OPS_PORT: '0',
    HTTP_PORT: '0',
    SHUTDOWN_GRACE_MS: '2000',
    CAIRN_DATA_KEY: randomBytes(32).toString('hex'),
    BLOB_STORE_URL: `file://${blobRoot}`,
    OCSP_PORT: String(ocspPort),
    OCSP_PUBLIC_URL: `http://127.0.0.1:${ocspPort}/ocsp`,
    ...overrides,
  };
  return {
    id,
    databaseName,
    databaseUrl,
    env,
    adminClient: async () => {
      const client = new pg.Client({ connectionString: appDatabaseUrl(PG_ADMIN_URL, databaseName) });
      await client.connect();
      return client;
    },
    dispose: async () => {
      // A test that never used NATS or Redis left no stream or keys to remove: a failure here is not the test's.
      await dropStream(env.NATS_STREAM as string).catch(() => undefined);
      await deleteRedisPrefix(env.REDIS_KEY_PREFIX as string).catch(() => undefined); // likewise
      await rm(blobRoot, { recursive: true, force: true });
      await dropDatabase(PG_ADMIN_URL, databaseName);
    },
  };
}

/** The event stream and its work queues (`<stream>_WORK_<NAME>`, packages/bus work-queue.ts). */
async function dropStream(stream: string): Promise<void> {
  const nc = await connect({ servers: NATS_URL });
  try {
    const jsm = await jetstreamManager(nc);
    const names: string[] = [];
    for await (const name of jsm.streams.names())
      if (name === stream || name.startsWith(`${stream}_WORK_`)) names.push(name);
    for (const name of names) await jsm.streams.delete(name);
  } finally {
    await nc.close();
  }
}

async function deleteRedisPrefix(prefix: string): Promise<void> {
  const redis = new Redis(REDIS_URL);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 500);
      cursor = next;
      if (keys.length) await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

function canListen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * A TCP port free right now on 127.0.0.1, for servers whose port must be known before they start. Taken
 * below Linux's ephemeral range (32768+), because an OS-assigned port (listen on 0) can be handed to another
 * socket — an outgoing connection to Postgres, another test's listen(0) — between this check and the service's
 * bind (seen as EADDRINUSE at stack start). Each jest worker takes its own block of 600, walked from a random
 * start, so workers and reruns do not meet either.
 */
const PORT_BLOCK = 600;
let nextPortOffset = -1;

export async function freePort(): Promise<number> {
  const worker = Number(process.env.JEST_WORKER_ID ?? '0') % 20;
  const base = 20_000 + worker * PORT_BLOCK;
  if (nextPortOffset < 0) nextPortOffset = Math.floor(Math.random() * PORT_BLOCK);
  for (let tries = 0; tries < PORT_BLOCK; tries++) {
    const port = base + (nextPortOffset++ % PORT_BLOCK);
    if (await canListen(port)) return port;
  }
  throw new Error(`no free port in ${base}-${base + PORT_BLOCK - 1}`);
}
