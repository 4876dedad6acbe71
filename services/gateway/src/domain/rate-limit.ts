// Token-bucket rate limiting, the pure half: policies, their buckets in integer units, the in-process buckets used
// while Redis is away, and the decision and headers. The Redis half (one Lua script over all buckets) is
// adapters/rate-limit.ts.

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

export interface BucketSpec {
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

/**
 * One policy's bucket for `subject`, in the integer units the script and the in-process fallback share (validated:
 * positive integers, small enough for exact arithmetic).
 */
export function bucketSpec(keyPrefix: string, subject: string, { name, policy }: NamedRateLimitPolicy): BucketSpec {
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
  const key = `${keyPrefix}{${subject}}:${name}:${policy.limit}/${policy.windowSeconds}s/${burst}`;
  return { name, policy, key, windowMs, capacityUnits, refillPerMs: policy.limit };
}

/**
 * The script's token buckets in this process's memory, with the same integer units, for while Redis is away.
 * A Map keeps insertion order: a touched subject is re-inserted, so the first entries are the least recently
 * seen and are dropped first when the map is full; a bucket back at capacity is dropped as the script's key expires.
 */
export class InProcessBuckets {
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

interface BucketView {
  remaining: number;
  resetMs: number;
  retryMs: number;
  limit: number;
}

/** Picks the most restrictive bucket: fewest remaining, then the longest wait. */
export function decide(
  allowed: boolean,
  specs: ReadonlyArray<BucketSpec>,
  levels: ReadonlyArray<number>,
): RateLimitDecision {
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
