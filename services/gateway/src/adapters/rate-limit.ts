import type { Redis, Result } from 'ioredis';
import {
  bucketSpec,
  decide,
  InProcessBuckets,
  type BucketSpec,
  type NamedRateLimitPolicy,
  type RateLimitDecision,
} from '../domain/rate-limit.js';

const COMMAND = 'cairnRateLimitConsume';

declare module 'ioredis' {
  interface RedisCommander<Context> {
    cairnRateLimitConsume(numKeys: number, ...keysThenArgs: Array<string | number>): Result<unknown, Context>;
  }
}

/*
 * Token bucket over several keys in one script so that concurrent gateway replicas cannot interleave
 * between "check" and "take", and so that a refusal by one bucket leaves every other bucket untouched.
 *
 * Units are chosen so that all arithmetic is on integers (exact in Lua's doubles): one token is worth
 * windowMs units and a bucket refills `limit` units per millisecond. The clock is Redis's own (TIME),
 * so replicas with skewed clocks agree. A key expires exactly when its bucket would be full again,
 * and a missing key means a full bucket, so idle subjects cost no memory.
 *
 * KEYS[i]: bucket i.  ARGV[3i-2], ARGV[3i-1], ARGV[3i]: capacity, refill per ms, cost (all in units).
 * Returns { allowed (1|0), level_1, ..., level_n } where level is the bucket content after this call.
 */
const CONSUME_LUA = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local n = #KEYS
local levels = {}
local allowed = 1
for i = 1, n do
  local cap = tonumber(ARGV[3 * i - 2])
  local rate = tonumber(ARGV[3 * i - 1])
  local cost = tonumber(ARGV[3 * i])
  local state = redis.call('HMGET', KEYS[i], 'u', 't')
  local level = cap
  if state[1] and state[2] then
    local elapsed = now - tonumber(state[2])
    if elapsed < 0 then elapsed = 0 end
    level = math.min(cap, tonumber(state[1]) + elapsed * rate)
  end
  levels[i] = level
  if level < cost then allowed = 0 end
end
if allowed == 1 then
  for i = 1, n do
    local cap = tonumber(ARGV[3 * i - 2])
    local rate = tonumber(ARGV[3 * i - 1])
    local cost = tonumber(ARGV[3 * i])
    local level = levels[i] - cost
    levels[i] = level
    redis.call('HSET', KEYS[i], 'u', level, 't', now)
    redis.call('PEXPIRE', KEYS[i], math.max(1, math.ceil((cap - level) / rate)))
  end
end
local out = { allowed }
for i = 1, n do out[i + 1] = levels[i] end
return out
`;

export interface RateLimiterOptions {
  /**
   * Called with the Redis error each time a decision is taken in process instead (Redis unreachable or too
   * slow); the caller logs it, throttled.
   */
  onFallback?: (error: unknown) => void;
  /** Subjects the in-process fallback tracks at most (the least recently seen are forgotten first). */
  fallbackMaxSubjects?: number;
  /** How long decisions stay in process after Redis failed before Redis is asked again; default 2 s. */
  retryRedisAfterMs?: number;
}

export class RedisRateLimiter {
  readonly #redis: Redis;
  readonly #keyPrefix: string;
  readonly #fallback: InProcessBuckets;
  readonly #onFallback: (error: unknown) => void;
  readonly #retryRedisAfterMs: number;
  #redisRetryAt = 0;

  constructor(redis: Redis, keyPrefix: string, options: RateLimiterOptions = {}) {
    this.#redis = redis;
    this.#keyPrefix = keyPrefix;
    this.#fallback = new InProcessBuckets(options.fallbackMaxSubjects ?? 100_000);
    this.#onFallback = options.onFallback ?? (() => undefined);
    this.#retryRedisAfterMs = options.retryRedisAfterMs ?? 2000;
    // Redefining is harmless, so several limiters may share one connection.
    redis.defineCommand(COMMAND, { lua: CONSUME_LUA });
  }

  /** Atomically consumes one unit from each policy's bucket for `subject`; refused if any refuses (and then consumes from none). */
  async consume(subject: string, policies: ReadonlyArray<NamedRateLimitPolicy>): Promise<RateLimitDecision> {
    if (subject.length === 0) throw new RangeError('rate limit subject must not be empty');
    if (policies.length === 0) throw new RangeError('at least one rate limit policy is required');
    const specs = policies.map((p) => bucketSpec(this.#keyPrefix, subject, p));
    if (new Set(specs.map((s) => s.name)).size !== specs.length) {
      throw new RangeError('rate limit policy names must be unique');
    }

    const args: Array<string | number> = specs.map((s) => s.key);
    for (const s of specs) args.push(s.capacityUnits, s.refillPerMs, s.windowMs);
    const now = Date.now();
    // After a failure Redis is left alone for a few seconds: a Redis that hangs rather than refuses would
    // otherwise cost every request the full command timeout.
    if (now < this.#redisRetryAt) return this.#decideInProcess(specs, now);
    let raw: unknown;
    try {
      raw = await this.#redis.cairnRateLimitConsume(specs.length, ...args);
    } catch (error) {
      // Redis down must not turn every limited route into a 500, nor lift every limit: the same buckets are
      // kept in this process until Redis answers again (per replica, so N replicas allow up to N times the
      // limit meanwhile; see docs/decisions/0021-limits-in-redis-with-fallback.md).
      this.#onFallback(error);
      this.#redisRetryAt = Date.now() + this.#retryRedisAfterMs;
      return this.#decideInProcess(specs, Date.now());
    }
    const reply = parseReply(raw, specs.length);
    return decide(reply.allowed, specs, reply.levels);
  }

  #decideInProcess(specs: ReadonlyArray<BucketSpec>, now: number): RateLimitDecision {
    const reply = this.#fallback.consume(specs, now);
    return decide(reply.allowed, specs, reply.levels);
  }
}

function parseReply(raw: unknown, n: number): { allowed: boolean; levels: number[] } {
  if (!Array.isArray(raw) || raw.length !== n + 1 || !raw.every((v): v is number => typeof v === 'number')) {
    throw new Error(`unexpected rate limit script reply: ${JSON.stringify(raw)}`);
  }
  const [allowed, ...levels] = raw;
  return { allowed: allowed === 1, levels };
}
