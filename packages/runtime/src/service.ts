import type pg from 'pg';
import type { DestinationStream } from 'pino';
import { Redis } from 'ioredis';
import type { z } from 'zod';
import type { GenService, GenServiceMethods } from '@bufbuild/protobuf/codegenv2';
import { Bus, idempotentHandler, inboxPrefix, StreamSettingsError, type RunningConsumer } from '@cairn/bus';
import type { AnyEvent, EventOf, EventType } from '@cairn/events';
import {
  commonEnvShape,
  ConfigError,
  DEFAULT_PORTS,
  grpcAddrVar,
  identityProblems,
  loadConfig,
  type CommonEnv,
  type ServiceName,
} from '@cairn/config';
import {
  assertRlsSubjectRole,
  closePool,
  createDb,
  createPool,
  migrateService,
  pgDedupeStore,
  pingDatabase,
  type Database,
  type Tx,
} from '@cairn/db';
import { createLogger, type Logger } from '@cairn/logging';
import {
  createClient,
  HealthState,
  readTlsFiles,
  RpcServer,
  ServingStatus,
  serviceTlsName,
  type ServiceClient,
  type TlsMaterial,
} from '@cairn/rpc';
import { healthV1 } from '@cairn/proto';
import { ServiceMetrics, startTelemetry, type TelemetryHandle } from '@cairn/telemetry';
import { closeServer, createOpsServer, listen, type ReadinessReport } from './ops-server.js';
import { Outbox } from './outbox.js';

export type ServiceConfig<S extends z.ZodRawShape> = CommonEnv & z.output<z.ZodObject<S>>;

export interface ServiceContext<S extends z.ZodRawShape = z.ZodRawShape> {
  readonly name: ServiceName;
  readonly config: ServiceConfig<S>;
  readonly logger: Logger;
  readonly pool: pg.Pool;
  readonly db: Database;
  readonly redis: Redis;
  readonly bus: Bus;
  readonly rpc: RpcServer;
  readonly health: HealthState;
  readonly metrics: ServiceMetrics;
  readonly outbox: Outbox;
  /** Runs on SIGTERM before the infrastructure closes, in reverse order of registration. */
  onShutdown(hook: () => Promise<void>): void;
  /**
   * A durable consumer whose handler takes effect once per event id, in a transaction scoped to the event's tenant.
   * The handler gets only events of `types`, parsed by their @cairn/events schema; an invalid one is logged and
   * terminated by the bus, never handled.
   */
  consume<T extends EventType>(
    durable: string,
    types: ReadonlyArray<T> | 'all',
    apply: (event: NoInfer<EventOf<T>>, tx: Tx) => Promise<void>,
  ): Promise<void>;
  /** Publishes a port the service listens on besides gRPC and ops (the gateway's HTTP API). */
  expose(name: string, port: number): void;
  /** A client for a peer service at `<PEER>_GRPC_ADDR` (default: the local fleet's port). */
  client<M extends GenServiceMethods>(service: GenService<M>, peer: ServiceName): ServiceClient<M>;
}

export interface ServiceDefinition<S extends z.ZodRawShape> {
  name: ServiceName;
  /** Service-specific settings, validated together with the common ones. */
  configShape: S;
  migrationsFolder: string;
  env?: NodeJS.ProcessEnv;
  /** Where log lines go (stdout by default); tests capture them to check what is (not) logged. */
  logDestination?: DestinationStream;
  register(ctx: ServiceContext<S>): Promise<void>;
}

/**
 * What each service's module exports: its definition for an environment (the process's by default), which its
 * registrations also read (a blob store's credentials, whether a setting was given at all).
 */
export function defineService<S extends z.ZodRawShape>(
  name: ServiceName,
  configShape: S,
  migrationsFolder: string,
  register: (ctx: ServiceContext<S>, env: NodeJS.ProcessEnv) => Promise<void>,
): (env?: NodeJS.ProcessEnv) => ServiceDefinition<S> {
  return (env = process.env) => ({ name, configShape, migrationsFolder, env, register: (ctx) => register(ctx, env) });
}

export interface RunningService {
  readonly name: ServiceName;
  readonly grpcPort: number;
  readonly opsPort: number;
  /** Extra ports published with ctx.expose, e.g. { http: 8080 }. */
  readonly endpoints: Readonly<Record<string, number>>;
  readonly context: ServiceContext<z.ZodRawShape>;
  stop(): Promise<void>;
}

/** How long, at most, the pool waits at shutdown for connections still lent out before cutting them. */
const POOL_SETTLE_MS = 2000;

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/**
 * Brings a service up the same way for all nine: telemetry, logger, Postgres (migrations applied), Redis,
 * NATS, gRPC with grpc.health.v1, the ops port, then the service's own registrations; and takes it down in
 * the reverse order, draining in-flight work first.
 */
export async function startService<S extends z.ZodRawShape>(definition: ServiceDefinition<S>): Promise<RunningService> {
  const env = definition.env ?? process.env;
  const config = loadConfig({ ...commonEnvShape, ...definition.configShape }, env) as unknown as ServiceConfig<S>;
  const identity = identityProblems(config);
  if (identity.length) throw new ConfigError(identity);
  const tls: TlsMaterial | undefined =
    config.GRPC_TLS_CA && config.GRPC_TLS_CERT && config.GRPC_TLS_KEY
      ? readTlsFiles({ ca: config.GRPC_TLS_CA, cert: config.GRPC_TLS_CERT, key: config.GRPC_TLS_KEY })
      : undefined;
  const telemetry: TelemetryHandle = startTelemetry(definition.name, env);
  const logger = createLogger({
    service: definition.name,
    level: config.LOG_LEVEL,
    ...(definition.logDestination ? { destination: definition.logDestination } : {}),
  });
  const metrics = new ServiceMetrics(definition.name);
  const health = new HealthState();
  health.set('', ServingStatus.NOT_SERVING);

  const pool = createPool(config.DATABASE_URL, config.DATABASE_POOL_MAX);
  // Last to close. A handler its consumer abandoned after the grace (its message handed back to JetStream) may
  // still hold a connection: it gets a short moment for a commit in flight, not another full grace, then its
  // session is cut so its locks do not block the replica now handling that message.
  const closers: Array<() => Promise<void>> = [
    async () => {
      const cut = await closePool(pool, Math.min(config.SHUTDOWN_GRACE_MS, POOL_SETTLE_MS));
      if (cut > 0) logger.warn({ cut }, 'database sessions still in use at shutdown were terminated');
    },
  ];
  const shutdownHooks: Array<() => Promise<void>> = [];
  const consumers: RunningConsumer[] = [];
  let draining = false;

  const cleanUp = async () => {
    for (const close of closers.reverse())
      await close().catch((error: unknown) => logger.warn({ err: error }, 'closing a connection failed at shutdown'));
    await telemetry.shutdown();
  };

  try {
    await withTimeout(pingDatabase(pool), 5000, 'Postgres').catch((error: unknown) => {
      throw new Error(`Cannot reach Postgres at ${redact(config.DATABASE_URL)}: ${String(error)}`);
    });
    // Before migrations: a superuser would create every table as itself and RLS would never apply.
    await assertRlsSubjectRole(pool);
    await migrateService(pool, definition.name, definition.migrationsFolder);
    const db = createDb(pool);

    // Until the first connection succeeds a failure is final (start-up reports it); after that, reconnect forever.
    let redisConnected = false;
    const redis = new Redis(config.REDIS_URL, {
      keyPrefix: config.REDIS_KEY_PREFIX,
      lazyConnect: true,
      // While Redis is away a command fails at once (no offline queue) or within commandTimeout (a Redis that
      // accepts but does not answer), so callers fall back or answer cleanly instead of waiting on a queue.
      maxRetriesPerRequest: 1,
      enableOfflineQueue: false,
      commandTimeout: 1000,
      retryStrategy: (attempt) => (redisConnected ? Math.min(attempt * 100, 2000) : null),
    });
    redis.on('error', (error) => logger.debug({ err: error }, 'redis connection error'));
    // Registered before connecting: a client that failed to connect would otherwise retry forever.
    closers.push(async () => {
      if (redis.status === 'ready') await redis.quit().catch(() => redis.disconnect());
      else redis.disconnect();
    });
    await withTimeout(redis.connect(), 5000, 'Redis').catch((error: unknown) => {
      throw new Error(`Cannot reach Redis at ${config.REDIS_URL}: ${String(error)}`);
    });
    redisConnected = true;

    const bus = await withTimeout(
      Bus.connect({
        url: config.NATS_URL,
        stream: config.NATS_STREAM,
        subjectPrefix: config.NATS_SUBJECT_PREFIX,
        name: `cairn-${definition.name}`,
        logger,
        user: config.NATS_USER,
        password: config.NATS_PASSWORD,
        token: config.NATS_TOKEN,
        inboxPrefix: inboxPrefix(definition.name),
        limits: { replicas: config.NATS_STREAM_REPLICAS, maxBytes: config.NATS_STREAM_MAX_BYTES },
      }),
      5000,
      'NATS',
    ).catch((error: unknown) => {
      // NATS answered, and refused the stream as configured: that, not reachability, is what to fix.
      if (error instanceof StreamSettingsError) throw error;
      throw new Error(`Cannot reach NATS JetStream at ${config.NATS_URL}: ${String(error)}`);
    });
    closers.push(() => bus.close(config.SHUTDOWN_GRACE_MS));

    const outbox = new Outbox(db, definition.name, bus, logger, metrics);
    const rpc = new RpcServer({
      maxConnectionAgeMs: config.GRPC_MAX_CONNECTION_AGE_MS,
      maxConnectionAgeGraceMs: config.GRPC_MAX_CONNECTION_AGE_GRACE_MS,
      onHandled: (method, outcome) => metrics.grpcHandled.inc({ method, outcome }),
    });
    rpc.add(healthV1.Health, health.impl());
    const clients: Array<{ close(): void }> = [];
    closers.push(async () => clients.forEach((c) => c.close()));

    const dedupe = pgDedupeStore(db, definition.name);
    const endpoints: Record<string, number> = {};
    const ctx: ServiceContext<S> = {
      name: definition.name,
      config,
      logger,
      pool,
      db,
      redis,
      bus,
      rpc,
      health,
      metrics,
      outbox,
      onShutdown: (hook) => void shutdownHooks.push(hook),
      expose: (name, port) => void (endpoints[name] = port),
      consume: async (durable, types, apply) => {
        // The bus hands this consumer only events of `types` (EventOf<T>); TypeScript cannot follow a generic T there.
        const handler = idempotentHandler(dedupe, durable, apply as (event: AnyEvent, tx: Tx) => Promise<void>);
        const consumer = await bus.consume<EventType>({
          durable,
          types,
          handler: async (event) => {
            try {
              await handler(event);
              metrics.eventsConsumed.inc({ durable, type: event.type, outcome: 'handled' });
            } catch (error) {
              metrics.eventsConsumed.inc({ durable, type: event.type, outcome: 'failed' });
              throw error;
            }
          },
        });
        consumers.push(consumer);
      },
      client: (service, peer) => {
        const address = env[grpcAddrVar(peer)] ?? `127.0.0.1:${DEFAULT_PORTS[peer].grpc}`;
        const client = createClient(service, address, tls ? { tls, serverName: serviceTlsName(peer) } : {});
        clients.push(client);
        return client;
      },
    };

    await definition.register(ctx);
    outbox.start({ baseMs: 1000, maxMs: config.OUTBOX_SWEEP_MAX_MS });
    closers.push(() => outbox.stop());

    const grpcPort = await rpc.listen(config.GRPC_HOST, config.GRPC_PORT ?? DEFAULT_PORTS[definition.name].grpc, tls);
    const readiness = async (): Promise<ReadinessReport> => {
      const checks: Record<string, string> = {};
      const probe = async (name: string, check: () => Promise<unknown>) => {
        try {
          await withTimeout(check(), 2000, name);
          checks[name] = 'ok';
        } catch (error) {
          checks[name] = error instanceof Error ? error.message : String(error);
        }
      };
      await Promise.all([
        probe('postgres', () => pingDatabase(pool)),
        probe('redis', () => redis.ping()),
        probe('nats', () => bus.ping()),
      ]);
      if (draining) checks.lifecycle = 'draining';
      // Only Postgres and draining mean "cannot serve". Without Redis the gateway limits in process; without
      // NATS the outbox keeps events in Postgres until it returns: taking every pod out of service for a blip
      // of either would turn a degraded fleet into a dead one.
      const ready = checks.postgres === 'ok' && !draining;
      return { ready, degraded: ready && (checks.redis !== 'ok' || checks.nats !== 'ok'), checks };
    };
    const ops = createOpsServer(metrics, readiness);
    const opsPort = await listen(ops, config.GRPC_HOST, config.OPS_PORT ?? DEFAULT_PORTS[definition.name].ops);
    closers.push(() => closeServer(ops, 1000));
    // The whole server ('') and each service by name, as grpc_health_probe -service=... asks.
    for (const service of ['', ...rpc.serviceNames]) health.set(service, ServingStatus.SERVING);
    logger.info({ grpc_port: grpcPort, ops_port: opsPort, ...endpoints }, `${definition.name} ready`);

    let stopping: Promise<void> | undefined;
    const stop = () => {
      stopping ??= (async () => {
        draining = true;
        health.setAll(ServingStatus.NOT_SERVING);
        logger.info('draining');
        for (const hook of shutdownHooks.reverse())
          await hook().catch((error: unknown) => logger.error({ err: error }, 'shutdown hook failed'));
        // Health watchers have seen NOT_SERVING; their streams end so the drain waits only for real calls.
        health.endWatches();
        await rpc.shutdown(config.SHUTDOWN_GRACE_MS);
        // Together, each bounded by the grace: a handler stuck on a dependency cannot hold the shutdown.
        await Promise.all(
          consumers.map((consumer) =>
            consumer
              .stop(config.SHUTDOWN_GRACE_MS)
              .catch((error: unknown) => logger.warn({ err: error }, 'a consumer failed to stop')),
          ),
        );
        await cleanUp();
        logger.info('stopped');
      })();
      return stopping;
    };
    return {
      name: definition.name,
      grpcPort,
      opsPort,
      endpoints,
      context: ctx as unknown as ServiceContext<z.ZodRawShape>,
      stop,
    };
  } catch (error) {
    await cleanUp();
    throw error;
  }
}

function redact(url: string): string {
  return url.replace(/\/\/([^:@/]+):[^@/]+@/, '//$1:***@');
}

/**
 * The process entry point of every service: start, then drain and exit 0 on SIGTERM/SIGINT; exit 1 with a
 * one-line reason when it cannot start (a dependency down, bad configuration).
 */
export function runService<S extends z.ZodRawShape>(definition: ServiceDefinition<S>): void {
  let running: RunningService | undefined;
  let stopRequested = false;
  const stopAndExit = (service: RunningService) =>
    service.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  // Installed before starting, so a SIGTERM during start-up (a rollout, a Ctrl-C) still drains cleanly.
  const onSignal = () => {
    if (stopRequested) process.exit(130); // a second signal means "now"
    stopRequested = true;
    if (running) void stopAndExit(running);
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  startService(definition).then(
    (service) => {
      running = service;
      if (stopRequested) void stopAndExit(service);
    },
    (error: unknown) => {
      process.stderr.write(
        `cairn-${definition.name}: cannot start: ${error instanceof Error ? error.message : String(error)}\n`,
      );
      process.exit(1);
    },
  );
}
