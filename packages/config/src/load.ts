import { z } from 'zod';
import { publicUrlProblems } from './public-url.js';

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n  ${problems.join('\n  ')}`);
    this.name = 'ConfigError';
  }
}

const port = z.coerce.number().int().min(0).max(65535);

/** Settings every service reads. Defaults are the local development fleet's. */
export const commonEnvShape = {
  CAIRN_ENV: z.enum(['development', 'production']).default('development'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  DATABASE_URL: z.string().url().default('postgres://cairn@127.0.0.1:5432/cairn'),
  DATABASE_POOL_MAX: z.coerce.number().int().positive().default(10),
  REDIS_URL: z.string().url().default('redis://127.0.0.1:6379'),
  REDIS_KEY_PREFIX: z.string().default('cairn:'),
  NATS_URL: z.string().default('nats://127.0.0.1:4222'),
  NATS_STREAM: z
    .string()
    .regex(/^[A-Za-z0-9_-]+$/)
    .default('CAIRN_EVENTS'),
  NATS_SUBJECT_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/)
    .default('cairn'),
  /**
   * Copies of every JetStream stream the services create (the event stream, the work queues): above 1 needs a
   * clustered JetStream with at least that many servers. Existing streams are brought to it at start.
   */
  NATS_STREAM_REPLICAS: z.coerce.number().int().min(1).max(5).default(1),
  /**
   * Bytes each of those streams may hold (NATS reserves it, × replicas, at creation); -1 = unlimited. Full, the
   * event stream drops its oldest events and a work queue refuses new items (the request answers 503).
   */
  NATS_STREAM_MAX_BYTES: z.coerce
    .number()
    .int()
    .refine((bytes) => bytes === -1 || bytes > 0, 'must be a positive number of bytes, or -1 for unlimited')
    .default(1024 ** 3),
  /** The service's own NATS user (cairn-<service>) and password, or a token: required in production off loopback. */
  NATS_USER: z.string().min(1).optional(),
  NATS_PASSWORD: z.string().min(1).optional(),
  NATS_TOKEN: z.string().min(1).optional(),
  GRPC_HOST: z.string().default('127.0.0.1'),
  /** PEM files: the fleet's CA, this service's certificate and key. gRPC is mutual TLS when set (all three). */
  GRPC_TLS_CA: z.string().min(1).optional(),
  GRPC_TLS_CERT: z.string().min(1).optional(),
  GRPC_TLS_KEY: z.string().min(1).optional(),
  GRPC_PORT: port.optional(),
  /**
   * The gRPC server closes each client connection after this long (calls in flight get the grace), so callers
   * reconnect, re-resolve their target and spread onto replicas started after them (packages/rpc ServerOptions).
   */
  GRPC_MAX_CONNECTION_AGE_MS: z.coerce.number().int().positive().default(300_000),
  GRPC_MAX_CONNECTION_AGE_GRACE_MS: z.coerce.number().int().nonnegative().default(30_000),
  OPS_PORT: port.optional(),
  DOCS_URL: z.string().url().default('https://docs.cairn.dev'),
  SHUTDOWN_GRACE_MS: z.coerce.number().int().positive().default(10000),
  /**
   * Longest wait between two sweeps of an idle outbox. The sweep relays what no flush did: events of a replica that
   * crashed between its commit and its flush, or that NATS refused for a while.
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
