import type { Redis, Result } from 'ioredis';

export interface RateLimitPolicy {
  /** sustained requests per window */
  limit: number;
  windowSeconds: number;
  /** bucket capacity, i.e. how many requests may arrive at once; default = limit */
  burst?: number;
}

export interface RateLimitDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** seconds until the bucket is full again (for RateLimit-Reset) */
  resetSeconds: number;
  /** whole seconds to wait before a retry would be allowed; 0 when allowed */
  retryAfterSeconds: number;
}

export interface NamedRateLimitPolicy {
  name: string;
  policy: RateLimitPolicy;
}

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

interface BucketSpec {
  name: string;
  policy: RateLimitPolicy;
  key: string;
  windowMs: number;
  capacityUnits: number;
  /** units per ms == policy.limit */
  refillPerMs: number;
}

/** Beyond this the integer unit arithmetic in the script would no longer be exact. */
const MAX_EXACT_UNITS = Number.MAX_SAFE_INTEGER / 4;

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
    const specs = policies.map((p) => this.#spec(subject, p));
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
      // limit meanwhile; see docs/design.md).
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

  #spec(subject: string, { name, policy }: NamedRateLimitPolicy): BucketSpec {
    const burst = policy.burst ?? policy.limit;
    if (name.length === 0) throw new RangeError('rate limit policy name must not be empty');
    for (const [field, value] of [
      ['limit', policy.limit],
      ['windowSeconds', policy.windowSeconds],
      ['burst', burst],
    ] as const) {
      if (!Number.isSafeInteger(value) || value < 1) {
        throw new RangeError(`rate limit policy "${name}": ${field} must be a positive integer, got ${value}`);
      }
    }
    const windowMs = policy.windowSeconds * 1000;
    const capacityUnits = burst * windowMs;
    if (capacityUnits > MAX_EXACT_UNITS) throw new RangeError(`rate limit policy "${name}" is too large`);
    // The policy is part of the key: stored units only mean something for the policy that wrote them,
    // so a changed policy starts from a fresh bucket instead of misreading the old one.
    // The {subject} hash tag keeps all of a subject's buckets in one Redis Cluster slot, as a multi-key script requires.
    const key = `${this.#keyPrefix}{${subject}}:${name}:${policy.limit}/${policy.windowSeconds}s/${burst}`;
    return { name, policy, key, windowMs, capacityUnits, refillPerMs: policy.limit };
  }
}

/**
 * The script's token buckets in this process's memory, with the same integer units, for while Redis is away.
 * A Map keeps insertion order: a touched subject is re-inserted, so the first entries are the least recently
 * seen and are dropped first when the map is full; a bucket back at capacity is dropped as the script's key expires.
 */
class InProcessBuckets {
  readonly #buckets = new Map<string, { units: number; at: number }>();

  constructor(private readonly maxEntries: number) {}

  consume(specs: ReadonlyArray<BucketSpec>, now: number): { allowed: boolean; levels: number[] } {
    const levels = specs.map((s) => {
      const state = this.#buckets.get(s.key);
      if (!state) return s.capacityUnits;
      return Math.min(s.capacityUnits, state.units + Math.max(0, now - state.at) * s.refillPerMs);
    });
    const allowed = specs.every((s, i) => (levels[i] ?? 0) >= s.windowMs);
    specs.forEach((s, i) => {
      const level = allowed ? (levels[i] ?? 0) - s.windowMs : (levels[i] ?? 0);
      levels[i] = level;
      this.#buckets.delete(s.key);
      if (level < s.capacityUnits) this.#buckets.set(s.key, { units: level, at: now });
    });
    while (this.#buckets.size > this.maxEntries) {
      const oldest = this.#buckets.keys().next().value;
      if (oldest === undefined) break;
      this.#buckets.delete(oldest);
    }
    return { allowed, levels };
  }
}

function parseReply(raw: unknown, n: number): { allowed: boolean; levels: number[] } {
  if (!Array.isArray(raw) || raw.length !== n + 1 || !raw.every((v): v is number => typeof v === 'number')) {
    throw new Error(`unexpected rate limit script reply: ${JSON.stringify(raw)}`);
  }
  const [allowed, ...levels] = raw;
  return { allowed: allowed === 1, levels };
}

interface BucketView {
  remaining: number;
  resetMs: number;
  retryMs: number;
  limit: number;
}

/** Picks the most restrictive bucket: fewest remaining, then the longest wait. */
function decide(allowed: boolean, specs: ReadonlyArray<BucketSpec>, levels: ReadonlyArray<number>): RateLimitDecision {
  const views: BucketView[] = specs.map((s, i) => {
    const level = levels[i] ?? 0;
    return {
      remaining: Math.floor(level / s.windowMs),
      resetMs: Math.ceil((s.capacityUnits - level) / s.refillPerMs),
      retryMs: level >= s.windowMs ? 0 : Math.ceil((s.windowMs - level) / s.refillPerMs),
      limit: s.policy.limit,
    };
  });
  let worst = views[0] as BucketView;
  for (const v of views.slice(1)) {
    const moreRestrictive =
      v.remaining < worst.remaining ||
      (v.remaining === worst.remaining &&
        (v.retryMs > worst.retryMs || (v.retryMs === worst.retryMs && v.resetMs > worst.resetMs)));
    if (moreRestrictive) worst = v;
  }
  return {
    allowed,
    limit: worst.limit,
    remaining: worst.remaining,
    resetSeconds: Math.ceil(worst.resetMs / 1000),
    retryAfterSeconds: allowed ? 0 : Math.max(1, Math.ceil(worst.retryMs / 1000)),
  };
}

/** RateLimit-* headers per draft-ietf-httpapi-ratelimit-headers (integer delta-seconds), plus Retry-After when refused. */
export function rateLimitHeaders(decision: RateLimitDecision): Record<string, string> {
  const int = (n: number): string => String(Math.max(0, Math.ceil(n)));
  const headers: Record<string, string> = {
    'RateLimit-Limit': int(decision.limit),
    'RateLimit-Remaining': int(Math.floor(decision.remaining)),
    'RateLimit-Reset': int(decision.resetSeconds),
  };
  if (!decision.allowed) headers['Retry-After'] = String(Math.max(1, Math.ceil(decision.retryAfterSeconds)));
  return headers;
}
