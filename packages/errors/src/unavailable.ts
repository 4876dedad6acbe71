import { CairnError } from './problem.js';

// Node socket errors of a dependency that is down, restarting or unreachable.
const SOCKET_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
]);
// PostgreSQL SQLSTATEs of a server going away or not accepting yet: admin_shutdown, crash_shutdown,
// cannot_connect_now, too_many_connections (class 08, connection exception, is matched by prefix).
const PG_STATES = new Set(['57P01', '57P02', '57P03', '53300']);
// node-postgres and pg-pool say so in words only.
const MESSAGES = [
  /^Connection terminated/,
  /timeout exceeded when trying to connect/,
  /is not queryable/,
  /^Connection is closed/,
];

function looksUnavailable(error: { code?: unknown; message?: unknown; name?: unknown }): boolean {
  const code = typeof error.code === 'string' ? error.code : '';
  if (SOCKET_CODES.has(code) || PG_STATES.has(code) || /^08[0-9A-Z]{3}$/.test(code)) return true;
  if (error.name === 'MaxRetriesPerRequestError') return true;
  return typeof error.message === 'string' && MESSAGES.some((m) => m.test(error.message as string));
}

/**
 * True when `error` (or anything in its `cause` chain, where query builders put the driver's error) says a
 * dependency such as Postgres is down or restarting: a temporary condition the client should retry, not a bug.
 */
export function isDependencyUnavailable(error: unknown): boolean {
  let current: unknown = error;
  for (let depth = 0; depth < 8 && typeof current === 'object' && current !== null; depth++) {
    if (looksUnavailable(current)) return true;
    current = (current as { cause?: unknown }).cause;
  }
  return false;
}

/** Seconds a client is told to wait (Retry-After) when a dependency is away: a restart usually takes a few. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 2;

/** The problem a request gets while a dependency is away: 503 cairn.unavailable, the driver's error as cause. */
export function dependencyUnavailable(error: unknown): CairnError {
  return new CairnError(
    'cairn.unavailable',
    'A dependency is temporarily unavailable; retry with backoff.',
    {},
    { cause: error },
  );
}
