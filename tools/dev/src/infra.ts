import { connect as tcpConnect } from 'node:net';
import pg from 'pg';
import { Redis } from 'ioredis';
import { connect as natsConnect } from '@nats-io/transport-node';
import { databaseRole, SERVICE_NAMES } from '@cairn/config';
import { createDatabase, databaseExists, ensureAppRole, provisionServiceRoles } from '@cairn/testing';

/** How to start each dependency on this machine (the README's local setup). */
export const START_COMMANDS = {
  postgres: 'pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start',
  redis: 'redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no',
  nats: 'start-stop-daemon --start --oknodo --background --exec /usr/sbin/nats-server -- -a 127.0.0.1 -p 4222 -js -sd /var/lib/nats-server',
} as const;

const DEFAULT_PORT = { postgres: 5432, redis: 6379, nats: 4222 } as const;

export type Dependency = keyof typeof START_COMMANDS;

export interface InfraTargets {
  /** The URL the Postgres query is made with (the admin URL when provisioning). */
  postgresUrl: string;
  redisUrl: string;
  natsUrl: string;
}

export interface InfraProblem {
  dependency: Dependency;
  label: string;
  target: string;
  problem: string;
  /** What to do about it: the start command when it is not reachable at all. */
  hint: string[];
}

const TIMEOUT_MS = 3000;

function message(error: unknown): string {
  if (error instanceof AggregateError && error.errors.length) return error.errors.map(message).join('; ');
  if (error instanceof Error) return error.message || error.name;
  return String(error);
}

function hostPort(url: string, fallbackPort: number): { host: string; port: number } {
  // nats URLs may be given as host:port without a scheme.
  const parsed = new URL(url.includes('://') ? url : `nats://${url}`);
  const host = parsed.hostname.replace(/^\[|\]$/g, '') || '127.0.0.1';
  return { host, port: parsed.port ? Number(parsed.port) : fallbackPort };
}

function tcpProbe(host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = tcpConnect({ host, port });
    const timer = setTimeout(() => socket.destroy(new Error(`no answer within ${TIMEOUT_MS} ms`)), TIMEOUT_MS);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.end();
      resolve();
    });
    socket.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}

function redactUrl(url: string): string {
  return url.replace(/\/\/([^:@/]+):[^@/]+@/, '//$1:***@');
}

/** The start command, plus a note when the configured address is not the one that command serves. */
function startHint(dependency: Dependency, host: string, port: number): string[] {
  const hint = [`start it: ${START_COMMANDS[dependency]}`];
  const local = host === '127.0.0.1' || host === 'localhost' || host === '::1';
  if (!local || port !== DEFAULT_PORT[dependency]) {
    hint.push(
      `(that command serves 127.0.0.1:${DEFAULT_PORT[dependency]}; the fleet is configured for ${host}:${port})`,
    );
  }
  return hint;
}

async function checkPostgres(url: string): Promise<InfraProblem | undefined> {
  const { host, port } = hostPort(url, DEFAULT_PORT.postgres);
  const base = { dependency: 'postgres' as const, label: 'Postgres', target: redactUrl(url) };
  try {
    await tcpProbe(host, port);
  } catch (error) {
    return {
      ...base,
      problem: `not reachable on ${host}:${port}: ${message(error)}`,
      hint: startHint('postgres', host, port),
    };
  }
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: TIMEOUT_MS });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('select 1');
    return undefined;
  } catch (error) {
    return {
      ...base,
      problem: `answers on ${host}:${port} but a query failed: ${message(error)}`,
      hint: ['check the URL, its user and database (PG_ADMIN_URL for provisioning, DATABASE_URL with --no-provision)'],
    };
  } finally {
    await client.end().catch(() => undefined); // the check's answer is above; a failed close changes nothing
  }
}

async function checkRedis(url: string): Promise<InfraProblem | undefined> {
  const { host, port } = hostPort(url, DEFAULT_PORT.redis);
  const redis = new Redis(url, {
    lazyConnect: true,
    connectTimeout: TIMEOUT_MS,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  });
  // ioredis reports the socket's error as an event and rejects with "Connection is closed": keep the former.
  let socketError: unknown;
  redis.on('error', (error) => {
    socketError ??= error;
  });
  try {
    await redis.connect();
    const answer = await redis.ping();
    if (answer !== 'PONG') throw new Error(`PING answered ${String(answer)}`);
    return undefined;
  } catch (error) {
    const reason = message(socketError ?? error);
    return {
      dependency: 'redis',
      label: 'Redis',
      target: redactUrl(url),
      problem: `not reachable on ${host}:${port}: ${reason}`,
      hint: startHint('redis', host, port),
    };
  } finally {
    redis.disconnect();
  }
}

async function checkNats(url: string): Promise<InfraProblem | undefined> {
  const first = url.split(',')[0] ?? url;
  const { host, port } = hostPort(first, DEFAULT_PORT.nats);
  const base = { dependency: 'nats' as const, label: 'NATS', target: url };
  try {
    const nc = await natsConnect({ servers: url, timeout: TIMEOUT_MS, reconnect: false, name: 'cairn-fleet-check' });
    const jetstream = nc.info?.jetstream === true;
    await nc.close();
    if (!jetstream) {
      return {
        ...base,
        problem: `answers on ${host}:${port} but JetStream is not enabled (the services need it)`,
        hint: ['run nats-server with -js, e.g.', ...startHint('nats', host, port)],
      };
    }
    return undefined;
  } catch (error) {
    return {
      ...base,
      problem: `not reachable on ${host}:${port}: ${message(error)}`,
      hint: startHint('nats', host, port),
    };
  }
}

/** Checks all three at once, so that one run names every dependency that is missing. */
export async function checkInfrastructure(targets: InfraTargets): Promise<InfraProblem[]> {
  const results = await Promise.all([
    checkPostgres(targets.postgresUrl),
    checkRedis(targets.redisUrl),
    checkNats(targets.natsUrl),
  ]);
  return results.filter((r): r is InfraProblem => r !== undefined);
}

export function describeProblems(problems: InfraProblem[]): string {
  const lines = [
    `cairn fleet: cannot start, ${problems.length === 1 ? 'a dependency is' : 'dependencies are'} not available:`,
    '',
  ];
  for (const p of problems) {
    lines.push(`  ✗ ${p.label} (${p.target}) ${p.problem}`);
    for (const h of p.hint) lines.push(`      ${h}`);
    lines.push('');
  }
  return lines.join('\n');
}

/**
 * The application role (non-superuser, so row-level security applies) and its database, created with the
 * admin connection when missing, and one role per service (cairn_<service>) that owns its schema in it. Both
 * names come from the app's DATABASE_URL (cairn / cairn by default).
 */
export async function provisionDatabase(
  adminUrl: string,
  appUrl: string,
): Promise<{ role: string; database: string; created: boolean }> {
  const parsed = new URL(appUrl);
  const role = decodeURIComponent(parsed.username);
  const database = decodeURIComponent(parsed.pathname.replace(/^\//, ''));
  if (!role || !database) throw new Error(`DATABASE_URL must name a user and a database (got ${redactUrl(appUrl)})`);
  await ensureAppRole(adminUrl, role);
  let created = false;
  if (!(await databaseExists(adminUrl, database))) {
    try {
      await createDatabase(adminUrl, database, role);
      created = true;
    } catch (error) {
      // Another launcher created it in the meantime.
      if (!(await databaseExists(adminUrl, database))) throw error;
    }
  }
  // Every service then connects as its own role (planFleet), owning only its schema.
  await provisionServiceRoles(
    adminUrl,
    database,
    role,
    SERVICE_NAMES.map((name) => ({ schema: name, role: databaseRole(name) })),
  );
  return { role, database, created };
}
