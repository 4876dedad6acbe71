import { z } from 'zod';
import { publicUrlProblems } from './public-url.js';

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n  ${problems.join('\n  ')}`);
    this.name = 'ConfigError';
  }
}

const port = z.coerce.number().int().min(0).max(65535);

/**
 * Settings every service reads. Defaults are the local development fleet's. The doc comment on each property is what
 * docs/configuration.md says it means (`pnpm docs:config`); a property without one shares the row above.
 */
export const commonEnvShape = {
  /**
   * `production` tightens the settings listed above (https webhook targets, the keys that have a development
   * default, public https URLs, no filesystem audit export).
   */
  CAIRN_ENV: z.enum(['development', 'production']).default('development'),
  /** pino level; logs are JSON with `service`, `request_id`, `tenant_id`, `trace_id`. */
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /**
   * The service's Postgres, as its own role `cairn_<svc>` owning only its schema (`npm run up` sets that user); a
   * superuser or BYPASSRLS role is refused at start, naming it (row-level security).
   */
  DATABASE_URL: z.string().url().default('postgres://cairn@127.0.0.1:5432/cairn'),
  /** Connections per service process. */
  DATABASE_POOL_MAX: z.coerce.number().int().positive().default(10),
  /**
   * Redis and the prefix of every key: the gateway's rate limits, caches. While Redis is unreachable a command fails
   * within 1 s (no offline queue) and the gateway keeps the same limits in process (per replica), with one warning
   * a minute; `/readyz` says `degraded`.
   */
  REDIS_URL: z.string().url().default('redis://127.0.0.1:6379'),
  REDIS_KEY_PREFIX: z.string().default('cairn:'),
  /** JetStream. */
  NATS_URL: z.string().default('nats://127.0.0.1:4222'),
  /** The event stream and its subjects (`cairn.<event type>`). */
  NATS_STREAM: z
    .string()
    .regex(/^[A-Za-z0-9_-]+$/)
    .default('CAIRN_EVENTS'),
  NATS_SUBJECT_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/)
    .default('cairn'),
  /**
   * Copies and size in bytes (`-1`: unlimited) of every stream the services create (the event stream, the sign and
   * verify work queues), applied at start to existing streams too (a change is logged). Above 1 replica needs a
   * clustered JetStream: a single server refuses it and the service does not start, saying so. NATS reserves the
   * size × replicas per stream at creation. Full, the event stream drops its oldest events; a work queue refuses new
   * items: the sign or verify answers 503 `cairn.unavailable` and nothing is queued or billed (docs/operations.md).
   */
  NATS_STREAM_REPLICAS: z.coerce.number().int().min(1).max(5).default(1),
  NATS_STREAM_MAX_BYTES: z.coerce
    .number()
    .int()
    .refine((bytes) => bytes === -1 || bytes > 0, 'must be a positive number of bytes, or -1 for unlimited')
    .default(1024 ** 3),
  /**
   * The service's own NATS identity (user `cairn-<svc>` and its password, or a token); required in production when
   * NATS is not on loopback.
   */
  NATS_USER: z.string().min(1).optional(),
  NATS_PASSWORD: z.string().min(1).optional(),
  NATS_TOKEN: z.string().min(1).optional(),
  /** Bind address of the gRPC and ops ports (`0.0.0.0` in containers). */
  GRPC_HOST: z.string().default('127.0.0.1'),
  /**
   * PEM files: the fleet's CA, this service's certificate and key (`npm run up`: `.cairn/tls/`). Set, gRPC is mutual
   * TLS both ways (clients check the peer's certificate names `cairn-<peer>`); all three or none; required in
   * production when `GRPC_HOST` is not loopback.
   */
  GRPC_TLS_CA: z.string().min(1).optional(),
  GRPC_TLS_CERT: z.string().min(1).optional(),
  GRPC_TLS_KEY: z.string().min(1).optional(),
  /**
   * The gRPC port; unset, the service's own (docs/architecture.md, `DEFAULT_PORTS`); `0` picks a free port.
   * @default the service's port
   */
  GRPC_PORT: port.optional(),
  /**
   * A gRPC server closes each client connection after this long (±10 % jitter; calls in flight get the grace, then
   * are cut), so callers reconnect, resolve again and send calls to replicas started after them (packages/rpc
   * ServerOptions).
   */
  GRPC_MAX_CONNECTION_AGE_MS: z.coerce.number().int().positive().default(300_000),
  GRPC_MAX_CONNECTION_AGE_GRACE_MS: z.coerce.number().int().nonnegative().default(30_000),
  /**
   * The ops port (`/healthz`, `/readyz`, `/metrics`); unset, the service's own; `0` picks a free port.
   * @default the service's port
   */
  OPS_PORT: port.optional(),
  /**
   * Base of Problem+JSON `type` URLs. The gateway, when this is unset, points them at its own
   * `/docs/api/errors#<code>` under `PUBLIC_BASE_URL`.
   */
  DOCS_URL: z.string().url().default('https://docs.cairn.dev'),
  /** How long a draining service lets in-flight work finish. */
  SHUTDOWN_GRACE_MS: z.coerce.number().int().positive().default(10000),
  /**
   * Longest wait between two sweeps of an idle outbox (1 s after an enqueue, doubling while a sweep finds nothing).
   * The sweep relays what no flush did: events of a replica that crashed between its commit and its flush, or that
   * NATS refused for a while.
   */
  OUTBOX_SWEEP_MAX_MS: z.coerce.number().int().min(100).max(600_000).default(30_000),
} as const;

export type CommonEnv = z.output<z.ZodObject<typeof commonEnvShape>>;

/** 127.0.0.0/8, ::1 and localhost: reachable only from the same host (in a cluster, the same pod). */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '').toLowerCase();
  return bare === 'localhost' || bare === '::1' || /^127\.\d+\.\d+\.\d+$/.test(bare);
}

function urlHosts(urls: string): string[] {
  return urls.split(',').map((url) => new URL(url.includes('://') ? url : `nats://${url}`).hostname);
}

/**
 * What a service's identity settings lack. Always: the TLS files come as a set. In production, nothing that
 * leaves the host is anonymous or plaintext: a gRPC server bound off loopback needs TLS, a NATS server off
 * loopback needs this service's credentials. (Loopback stays open so one host can run a service alone.)
 */
export function identityProblems(config: CommonEnv): string[] {
  const problems: string[] = [];
  const tls = [config.GRPC_TLS_CA, config.GRPC_TLS_CERT, config.GRPC_TLS_KEY].filter(Boolean).length;
  if (tls !== 0 && tls !== 3) problems.push('GRPC_TLS_CA, GRPC_TLS_CERT and GRPC_TLS_KEY: give all three or none');
  if (config.CAIRN_ENV !== 'production') return problems;
  if (tls === 0 && !isLoopbackHost(config.GRPC_HOST)) {
    problems.push(
      `GRPC_TLS_CA, GRPC_TLS_CERT, GRPC_TLS_KEY: required in production when gRPC listens on ${config.GRPC_HOST} (mutual TLS between services)`,
    );
  }
  const natsCredentials = Boolean((config.NATS_USER && config.NATS_PASSWORD) || config.NATS_TOKEN);
  if (!natsCredentials && !urlHosts(config.NATS_URL).every(isLoopbackHost)) {
    problems.push(
      "NATS_USER and NATS_PASSWORD (or NATS_TOKEN): required in production for a NATS server off this host (the service's own NATS identity)",
    );
  }
  return problems;
}

/**
 * Parses the environment with a zod shape and reports every bad variable at once, so a misconfigured
 * deployment fails at start with one readable message instead of at first use. In production, the shape's public
 * URL settings (publicUrlSetting) must be public https URLs.
 */
export function loadConfig<S extends z.ZodRawShape>(
  shape: S,
  env: NodeJS.ProcessEnv = process.env,
): z.output<z.ZodObject<S>> {
  const result = z.object(shape).safeParse(env);
  if (!result.success) throw new ConfigError(result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`));
  const production = publicUrlProblems(shape, result.data);
  if (production.length) throw new ConfigError(production);
  return result.data;
}
