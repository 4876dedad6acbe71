import { describe, it, expect, beforeAll, afterAll } from '@jest/globals';
import { Redis } from 'ioredis';
import { freePort } from '@cairn/testing';
import { RedisRateLimiter } from '../src/adapters/rate-limit.js';
import { rateLimitHeaders, type RateLimitDecision } from '../src/domain/rate-limit.js';

const REDIS_URL = process.env['REDIS_URL'] ?? 'redis://127.0.0.1:6379';
const PREFIX = `test:ratelimit:${process.pid}:${Date.now()}:`;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

let redis: Redis;
let limiter: RedisRateLimiter;
let subjectSeq = 0;
// Each test gets its own subject so buckets never leak between tests.
const freshSubject = (label: string): string => `${label}-${++subjectSeq}`;

type Policies = Parameters<RedisRateLimiter['consume']>[1];

/** Whether each of `calls` consumes in a row, one after the other, was allowed. */
async function allowedInTurn(
  on: RedisRateLimiter,
  subject: string,
  policies: Policies,
  calls: number,
): Promise<boolean[]> {
  const allowed: boolean[] = [];
  for (let i = 0; i < calls; i++) allowed.push((await on.consume(subject, policies)).allowed);
  return allowed;
}

async function keysUnderPrefix(): Promise<string[]> {
  const found: string[] = [];
  let cursor = '0';
  do {
    const [next, batch] = await redis.scan(cursor, 'MATCH', `${PREFIX}*`, 'COUNT', 1000);
    cursor = next;
    found.push(...batch);
  } while (cursor !== '0');
  return found;
}

beforeAll(async () => {
  redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await redis.connect();
  limiter = new RedisRateLimiter(redis, PREFIX);
});

afterAll(async () => {
  const keys = await keysUnderPrefix();
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
});

describe('RedisRateLimiter', () => {
  it('refuses a burst beyond the limit with remaining 0 and a retry delay', async () => {
    const subject = freshSubject('burst');
    const policies = [{ name: 'rpm', policy: { limit: 3, windowSeconds: 60 } }];

    const allowed: RateLimitDecision[] = [];
    for (let i = 0; i < 3; i++) allowed.push(await limiter.consume(subject, policies));
    expect(allowed.map((d) => d.allowed)).toEqual([true, true, true]);
    expect(allowed.map((d) => d.remaining)).toEqual([2, 1, 0]);
    expect(allowed.every((d) => d.limit === 3 && d.retryAfterSeconds === 0)).toBe(true);

    const refused = await limiter.consume(subject, policies);
    expect(refused.allowed).toBe(false);
    expect(refused.remaining).toBe(0);
    expect(refused.limit).toBe(3);
    expect(refused.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    // One token per 20 s at 3 per minute.
    expect(refused.retryAfterSeconds).toBeLessThanOrEqual(20);
    expect(refused.resetSeconds).toBeGreaterThan(40);
    expect(refused.resetSeconds).toBeLessThanOrEqual(60);
  });

  it('refills tokens over time', async () => {
    const subject = freshSubject('refill');
    const policies = [{ name: 'rps', policy: { limit: 2, windowSeconds: 1 } }];

    expect(await allowedInTurn(limiter, subject, policies, 2)).toEqual([true, true]);
    expect(await limiter.consume(subject, policies)).toMatchObject({ allowed: false, retryAfterSeconds: 1 });

    // 2 per second refills one token every 500 ms.
    await sleep(600);
    expect(await allowedInTurn(limiter, subject, policies, 2)).toEqual([true, false]);
  });

  it('keeps separate buckets per subject', async () => {
    const a = freshSubject('tenant-a');
    const b = freshSubject('tenant-b');
    const policies = [{ name: 'rpm', policy: { limit: 1, windowSeconds: 60 } }];

    expect(await allowedInTurn(limiter, a, policies, 2)).toEqual([true, false]);
    expect(await limiter.consume(b, policies)).toMatchObject({ allowed: true, remaining: 0 });
  });

  it('does not consume from other policies when one refuses, and reports the most restrictive', async () => {
    const subject = freshSubject('two-policies');
    const short = { name: 'short', policy: { limit: 1, windowSeconds: 60 } };
    const long = { name: 'long', policy: { limit: 5, windowSeconds: 3600 } };

    const first = await limiter.consume(subject, [short, long]);
    expect(first).toMatchObject({ allowed: true, limit: 1, remaining: 0 });

    for (let i = 0; i < 3; i++) {
      const refused = await limiter.consume(subject, [short, long]);
      expect(refused).toMatchObject({ allowed: false, limit: 1, remaining: 0 });
      expect(refused.retryAfterSeconds).toBeGreaterThanOrEqual(1);
      expect(refused.retryAfterSeconds).toBeLessThanOrEqual(60);
    }

    // Only the first (allowed) call took from "long": 5 - 1 - this call = 3.
    const longOnly = await limiter.consume(subject, [long]);
    expect(longOnly).toMatchObject({ allowed: true, limit: 5, remaining: 3 });
  });

  it('reports the longest wait when several policies refuse', async () => {
    const subject = freshSubject('both-refuse');
    const minute = { name: 'minute', policy: { limit: 1, windowSeconds: 60 } };
    const hour = { name: 'hour', policy: { limit: 1, windowSeconds: 3600 } };

    expect((await limiter.consume(subject, [minute, hour])).allowed).toBe(true);
    const refused = await limiter.consume(subject, [minute, hour]);
    expect(refused.allowed).toBe(false);
    expect(refused.retryAfterSeconds).toBeGreaterThan(3500);
    expect(refused.resetSeconds).toBeGreaterThan(3500);
  });

  it('honours burst as the bucket capacity', async () => {
    const subject = freshSubject('burst-capacity');
    const policies = [{ name: 'daily', policy: { limit: 1, windowSeconds: 86_400, burst: 4 } }];

    expect(await allowedInTurn(limiter, subject, policies, 5)).toEqual([true, true, true, true, false]);
  });

  it('allows exactly the limit under 50 concurrent calls from several connections', async () => {
    const subject = freshSubject('concurrent');
    const policies = [{ name: 'rpm', policy: { limit: 10, windowSeconds: 60 } }];
    // Separate connections make the calls genuinely race on the server, like separate gateway replicas.
    const clients = Array.from({ length: 5 }, () => new Redis(REDIS_URL, { maxRetriesPerRequest: 1 }));
    try {
      const limiters = clients.map((c) => new RedisRateLimiter(c, PREFIX));
      const decisions = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          (limiters[i % limiters.length] as RedisRateLimiter).consume(subject, policies),
        ),
      );
      expect(decisions.filter((d) => d.allowed)).toHaveLength(10);
      expect(decisions.filter((d) => !d.allowed).every((d) => d.remaining === 0 && d.retryAfterSeconds >= 1)).toBe(
        true,
      );
    } finally {
      await Promise.all(clients.map((c) => c.quit()));
    }
  });

  it('lets its keys expire once idle', async () => {
    const subject = freshSubject('expiry');
    await limiter.consume(subject, [
      { name: 'rps', policy: { limit: 20, windowSeconds: 1 } },
      { name: 'daily', policy: { limit: 50_000, windowSeconds: 86_400, burst: 50_000 } },
    ]);
    const keys = (await keysUnderPrefix()).filter((k) => k.includes(`{${subject}}`));
    expect(keys).toHaveLength(2);
    for (const key of keys) {
      const ttl = await redis.pttl(key);
      expect(ttl).toBeGreaterThan(0);
      // Time to refill one token: 50 ms for rps, ~1.7 s for daily.
      expect(ttl).toBeLessThanOrEqual(2000);
    }
  });

  it('rejects invalid policies', async () => {
    await expect(limiter.consume('x', [])).rejects.toThrow(RangeError);
    await expect(limiter.consume('x', [{ name: 'bad', policy: { limit: 0, windowSeconds: 1 } }])).rejects.toThrow(
      RangeError,
    );
    await expect(limiter.consume('x', [{ name: 'bad', policy: { limit: 1.5, windowSeconds: 1 } }])).rejects.toThrow(
      RangeError,
    );
    await expect(
      limiter.consume('x', [
        { name: 'dup', policy: { limit: 1, windowSeconds: 1 } },
        { name: 'dup', policy: { limit: 2, windowSeconds: 1 } },
      ]),
    ).rejects.toThrow(RangeError);
  });
});

describe('RedisRateLimiter with Redis unreachable', () => {
  /** A real client pointed at a port where nothing listens, configured as services configure theirs. */
  const unreachableRedis = async (): Promise<Redis> =>
    new Redis(`redis://127.0.0.1:${await freePort()}`, {
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      retryStrategy: () => null,
    });

  /** A limiter on that client, keeping each fallback it reports in `errors`. */
  const unreachableLimiter = async (retryRedisAfterMs: number) => {
    const dead = await unreachableRedis();
    const errors: unknown[] = [];
    const fallback = new RedisRateLimiter(dead, PREFIX, {
      onFallback: (error) => errors.push(error),
      retryRedisAfterMs,
    });
    return { dead, errors, fallback };
  };

  it('keeps the same buckets in process (refusing past the limit, per subject), reporting each fallback, and never throws', async () => {
    const { dead, errors, fallback } = await unreachableLimiter(0);
    const policy = [{ name: 'rps', policy: { limit: 3, windowSeconds: 60 } }];
    const decisions: RateLimitDecision[] = [];
    for (let i = 0; i < 4; i += 1) decisions.push(await fallback.consume('subject-a', policy));
    expect(decisions.map((d) => d.allowed)).toEqual([true, true, true, false]);
    expect(decisions.map((d) => d.remaining)).toEqual([2, 1, 0, 0]);
    expect(decisions[3]!.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect((await fallback.consume('subject-b', policy)).allowed).toBe(true);
    expect(errors).toHaveLength(5);
    dead.disconnect();
  });

  it('after a failure leaves Redis alone for a while (a hung Redis would cost every request its timeout)', async () => {
    const { dead, errors, fallback } = await unreachableLimiter(600_000);
    const policy = [{ name: 'rps', policy: { limit: 2, windowSeconds: 60 } }];
    expect(await allowedInTurn(fallback, 'subject-c', policy, 3)).toEqual([true, true, false]);
    expect(errors).toHaveLength(1);
    dead.disconnect();
  });
});

describe('rateLimitHeaders', () => {
  it('formats integers and omits Retry-After when allowed', async () => {
    const decision = await limiter.consume(freshSubject('headers-ok'), [
      { name: 'rps', policy: { limit: 20, windowSeconds: 1 } },
    ]);
    const headers = rateLimitHeaders(decision);
    expect(Object.keys(headers).sort()).toEqual(['RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset']);
    expect(headers['RateLimit-Limit']).toBe('20');
    expect(headers['RateLimit-Remaining']).toBe('19');
    expect(headers['RateLimit-Reset']).toMatch(/^\d+$/);
  });

  it('adds Retry-After when refused', async () => {
    const subject = freshSubject('headers-refused');
    const policies = [{ name: 'rpm', policy: { limit: 1, windowSeconds: 60 } }];
    await limiter.consume(subject, policies);
    const headers = rateLimitHeaders(await limiter.consume(subject, policies));
    expect(headers['RateLimit-Remaining']).toBe('0');
    expect(headers['Retry-After']).toMatch(/^[1-9]\d*$/);
    for (const value of Object.values(headers)) expect(value).toMatch(/^\d+$/);
  });

  it('never emits fractional or negative values', () => {
    const headers = rateLimitHeaders({
      allowed: false,
      limit: 10,
      remaining: -1,
      resetSeconds: 2.2,
      retryAfterSeconds: 0.4,
    });
    expect(headers).toEqual({
      'RateLimit-Limit': '10',
      'RateLimit-Remaining': '0',
      'RateLimit-Reset': '3',
      'Retry-After': '1',
    });
  });
});
