import { z } from 'zod';

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
  NATS_STREAM: z.string().regex(/^[A-Za-z0-9_-]+$/).default('CAIRN_EVENTS'),
  NATS_SUBJECT_PREFIX: z.string().regex(/^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/).default('cairn'),
  GRPC_HOST: z.string().default('127.0.0.1'),
  GRPC_PORT: port.optional(),
  OPS_PORT: port.optional(),
  DOCS_URL: z.string().url().default('https://docs.cairn.dev'),
  SHUTDOWN_GRACE_MS: z.coerce.number().int().positive().default(10000),
} as const;

export type CommonEnv = z.output<z.ZodObject<typeof commonEnvShape>>;

/**
 * Parses the environment with a zod shape and reports every bad variable at once, so a misconfigured
 * deployment fails at start with one readable message instead of at first use.
 */
export function loadConfig<S extends z.ZodRawShape>(shape: S, env: NodeJS.ProcessEnv = process.env): z.output<z.ZodObject<S>> {
  const result = z.object(shape).safeParse(env);
  if (result.success) return result.data;
  throw new ConfigError(result.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`));
}
