import { randomUUID } from 'node:crypto';
import type { Redis, Result } from 'ioredis';
import type { ConcurrencySlots, Slot } from '../app/ports.js';

const COMMAND = 'cairnSlotAcquire';

declare module 'ioredis' {
  interface RedisCommander<Context> {
    cairnSlotAcquire(
      numKeys: number,
      key: string,
      limit: number,
      ttlMs: number,
      member: string,
    ): Result<unknown, Context>;
  }
}

/*
 * A counting semaphore as a sorted set: one member per held slot, scored by the time (Redis's own clock, so
 * replicas agree) at which it lapses. Members past their time are dropped before counting, so a slot whose
 * holder died (a killed gateway never releases) frees itself after the TTL instead of leaking for good.
 * Check and take are one script, so concurrent replicas cannot both take the last slot.
 *
 * KEYS[1]: the set.  ARGV: limit, ttl in ms, member.  Returns 1 when the slot was taken, 0 when full.
 */
const ACQUIRE_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return 0 end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]))
return 1
`;

export interface ConcurrencyLimiterOptions {
  /** Called with the Redis error each time slots are counted in process instead; the caller logs it, throttled. */
  onFallback?: (error: unknown) => void;
}

/**
 * At most `limit` concurrent holders per subject across every gateway replica (Redis), e.g. signs in flight per
 * tenant. With Redis unreachable it does what the rate limiter does: counts in this process, with a warning,
 * never a 500 (so N replicas allow up to N times the limit meanwhile;
 * docs/decisions/0021-limits-in-redis-with-fallback.md).
 */
export class RedisConcurrencyLimiter implements ConcurrencySlots {
  readonly #redis: Redis;
  readonly #keyPrefix: string;
  readonly #ttlMs: number;
  readonly #onFallback: (error: unknown) => void;
  readonly #local = new Map<string, number>();

  /** `ttlMs`: longest a slot may be held (the guarded work's own deadline and a margin). */
  constructor(redis: Redis, keyPrefix: string, ttlMs: number, options: ConcurrencyLimiterOptions = {}) {
    if (!Number.isSafeInteger(ttlMs) || ttlMs < 1)
      throw new RangeError(`slot TTL must be a positive integer, got ${ttlMs}`);
    this.#redis = redis;
    this.#keyPrefix = keyPrefix;
    this.#ttlMs = ttlMs;
    this.#onFallback = options.onFallback ?? (() => undefined);
    redis.defineCommand(COMMAND, { lua: ACQUIRE_LUA });
  }

  /** A slot for `subject`, or null when `limit` are already held. */
  async tryAcquire(subject: string, limit: number): Promise<Slot | null> {
    if (subject.length === 0) throw new RangeError('concurrency subject must not be empty');
    if (!Number.isSafeInteger(limit) || limit < 1)
      throw new RangeError(`concurrency limit must be a positive integer, got ${limit}`);
    const key = `${this.#keyPrefix}{${subject}}`;
    const member = randomUUID();
    let taken: unknown;
    try {
      taken = await this.#redis.cairnSlotAcquire(1, key, limit, this.#ttlMs, member);
    } catch (error) {
      this.#onFallback(error);
      return this.#acquireLocally(key, limit);
    }
    if (taken !== 1) return null;
    let released = false;
    return {
      release: async () => {
        if (released) return;
        released = true;
        // A release that cannot reach Redis is not an error for the request: the member lapses after the TTL.
        await this.#redis.zrem(key, member).catch((error: unknown) => this.#onFallback(error));
      },
    };
  }

  #acquireLocally(key: string, limit: number): Slot | null {
    const held = this.#local.get(key) ?? 0;
    if (held >= limit) return null;
    this.#local.set(key, held + 1);
    let released = false;
    return {
      release: async () => {
        if (released) return;
        released = true;
        const now = (this.#local.get(key) ?? 1) - 1;
        if (now <= 0) this.#local.delete(key);
        else this.#local.set(key, now);
      },
    };
  }
}
