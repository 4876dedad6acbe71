import type { Redis } from 'ioredis';

export interface AuthFailureCheck {
  blocked: boolean;
  /** Whole seconds until the window ends (for Retry-After); 0 when not blocked. */
  retryAfterSeconds: number;
}

export interface AuthFailureLimitOptions {
  /** Called with the Redis error each time failures are counted in process instead; the caller logs it, throttled. */
  onFallback?: (error: unknown) => void;
  /** Addresses the in-process fallback tracks at most (the oldest windows are forgotten first). */
  fallbackMaxSubjects?: number;
}

/**
 * Failed authentications per subject (a hashed client address, or an address and key id) in a fixed window that
 * starts at the first failure. `check` is one Redis read and runs before any database work; `recordFailure` counts
 * a 401. `trust` marks a subject that authenticated (an address and key id) for `trustSeconds`, so that key keeps
 * working from an address another client's guesses have locked. With Redis unreachable all of it runs in this
 * process, as the rate limiter does (docs/decisions/0021-limits-in-redis-with-fallback.md).
 */
export class AuthFailureLimit {
  readonly #redis: Redis;
  readonly #keyPrefix: string;
  readonly #limit: number;
  readonly #windowMs: number;
  readonly #trustMs: number;
  readonly #onFallback: (error: unknown) => void;
  readonly #maxLocal: number;
  readonly #local = new Map<string, { count: number; resetAt: number }>();

  constructor(
    redis: Redis,
    keyPrefix: string,
    policy: { limit: number; windowSeconds: number; trustSeconds?: number },
    options: AuthFailureLimitOptions = {},
  ) {
    const trustSeconds = policy.trustSeconds ?? 3600;
    for (const [field, value] of [
      ['limit', policy.limit],
      ['windowSeconds', policy.windowSeconds],
      ['trustSeconds', trustSeconds],
    ] as const) {
      if (!Number.isSafeInteger(value) || value < 1)
        throw new RangeError(`auth failure limit: ${field} must be a positive integer, got ${value}`);
    }
    this.#redis = redis;
    this.#keyPrefix = keyPrefix;
    this.#limit = policy.limit;
    this.#windowMs = policy.windowSeconds * 1000;
    this.#trustMs = trustSeconds * 1000;
    this.#onFallback = options.onFallback ?? (() => undefined);
    this.#maxLocal = options.fallbackMaxSubjects ?? 100_000;
  }

  async check(subject: string): Promise<AuthFailureCheck> {
    const key = this.#key(subject);
    let count: number;
    let ttlMs: number;
    try {
      const [[countError, rawCount], [ttlError, rawTtl]] = ((await this.#redis.multi().get(key).pttl(key).exec()) ?? [
        [new Error('transaction discarded'), null],
        [null, null],
      ]) as [[Error | null, unknown], [Error | null, unknown]];
      if (countError) throw countError;
      if (ttlError) throw ttlError;
      count = typeof rawCount === 'string' ? Number(rawCount) : 0;
      ttlMs = typeof rawTtl === 'number' ? rawTtl : -2;
    } catch (error) {
      this.#onFallback(error);
      const local = this.#liveLocal(key, Date.now());
      count = local?.count ?? 0;
      ttlMs = local ? local.resetAt - Date.now() : -2;
    }
    if (count < this.#limit) return { blocked: false, retryAfterSeconds: 0 };
    // A key without a TTL (-1) should not exist; treat it as a full window rather than "retry now".
    return { blocked: true, retryAfterSeconds: Math.max(1, Math.ceil((ttlMs > 0 ? ttlMs : this.#windowMs) / 1000)) };
  }

  async recordFailure(subject: string): Promise<void> {
    const key = this.#key(subject);
    try {
      // NX: the window starts at the first failure and is not pushed back by later ones.
      await this.#redis.multi().incr(key).pexpire(key, this.#windowMs, 'NX').exec();
    } catch (error) {
      this.#onFallback(error);
      const now = Date.now();
      const local = this.#liveLocal(key, now) ?? { count: 0, resetAt: now + this.#windowMs };
      local.count += 1;
      this.#remember(key, local);
    }
  }

  /** Whether `subject` authenticated within the last trustSeconds. */
  async isTrusted(subject: string): Promise<boolean> {
    const key = this.#trustKey(subject);
    try {
      return (await this.#redis.exists(key)) === 1;
    } catch (error) {
      this.#onFallback(error);
      return this.#liveLocal(key, Date.now()) !== undefined;
    }
  }

  /** Marks `subject` as having authenticated; each success restarts its trustSeconds. */
  async trust(subject: string): Promise<void> {
    const key = this.#trustKey(subject);
    try {
      await this.#redis.set(key, '1', 'PX', this.#trustMs);
    } catch (error) {
      this.#onFallback(error);
      this.#remember(key, { count: 1, resetAt: Date.now() + this.#trustMs });
    }
  }

  #key(subject: string): string {
    if (subject.length === 0) throw new RangeError('auth failure subject must not be empty');
    return `${this.#keyPrefix}${subject}:${this.#limit}/${this.#windowMs}ms`;
  }

  #trustKey(subject: string): string {
    if (subject.length === 0) throw new RangeError('auth failure subject must not be empty');
    return `${this.#keyPrefix}trusted:${subject}`;
  }

  #remember(key: string, entry: { count: number; resetAt: number }): void {
    this.#local.delete(key);
    this.#local.set(key, entry);
    while (this.#local.size > this.#maxLocal) {
      const oldest = this.#local.keys().next().value;
      if (oldest === undefined) break;
      this.#local.delete(oldest);
    }
  }

  #liveLocal(key: string, now: number): { count: number; resetAt: number } | undefined {
    const entry = this.#local.get(key);
    if (entry && entry.resetAt <= now) {
      this.#local.delete(key);
      return undefined;
    }
    return entry;
  }
}
