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

/** A trust mark is rewritten at most this often per subject by one process. */
const TRUST_REWRITE_MS = 60_000;
const countOf = (reply: unknown): number => (typeof reply === 'string' ? Number(reply) : 0);
const ttlOf = (reply: unknown): number => (typeof reply === 'number' ? reply : -2);

/**
 * Failed authentications per subject (a hashed client address, or an address and key id) in a fixed window that
 * starts at the first failure. `admit` is one Redis round trip and runs before any database work; `recordFailure` counts
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
  /** When this process last wrote each trust mark (epoch ms). */
  readonly #marked = new Map<string, number>();

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

  /**
   * Whether a request from `address` (with `keySubject`, its address and key id, when the key is well formed) may
   * try to authenticate: held to the key's own failures when that key authenticated from the address within the
   * trust period, else to the address's. One Redis round trip for the trust mark and both counts.
   */
  async admit(address: string, keySubject: string | undefined): Promise<AuthFailureCheck & { trusted: boolean }> {
    const addressKey = this.#key(address);
    const subject =
      keySubject === undefined ? undefined : { key: this.#key(keySubject), trustKey: this.#trustKey(keySubject) };
    let trusted: boolean;
    let count: number;
    let ttlMs: number;
    try {
      const multi = this.#redis.multi().get(addressKey).pttl(addressKey);
      if (subject) multi.exists(subject.trustKey).get(subject.key).pttl(subject.key);
      const replies = (await multi.exec()) ?? [[new Error('transaction discarded'), null]];
      for (const [error] of replies) if (error) throw error;
      const [addressCount, addressTtl, trustMark, subjectCount, subjectTtl] = replies.map(([, value]) => value);
      trusted = trustMark === 1;
      count = countOf(trusted ? subjectCount : addressCount);
      ttlMs = ttlOf(trusted ? subjectTtl : addressTtl);
    } catch (error) {
      this.#onFallback(error);
      const now = Date.now();
      trusted = subject !== undefined && this.#liveLocal(subject.trustKey, now) !== undefined;
      const local = this.#liveLocal(trusted && subject ? subject.key : addressKey, now);
      count = local?.count ?? 0;
      ttlMs = local ? local.resetAt - now : -2;
    }
    if (count < this.#limit) return { trusted, blocked: false, retryAfterSeconds: 0 };
    // A key without a TTL (-1) should not exist; treat it as a full window rather than "retry now".
    const retryAfterSeconds = Math.max(1, Math.ceil((ttlMs > 0 ? ttlMs : this.#windowMs) / 1000));
    return { trusted, blocked: true, retryAfterSeconds };
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

  /**
   * Marks `subject` as having authenticated: a success restarts its trustSeconds, written at most once a minute per
   * subject by this process (a key in steady use costs no write per request; its mark outlives the last success by
   * trustSeconds less at most that minute).
   */
  async trust(subject: string): Promise<void> {
    const key = this.#trustKey(subject);
    const now = Date.now();
    const marked = this.#marked.get(key);
    if (marked !== undefined && now - marked < TRUST_REWRITE_MS) return;
    this.#touch(this.#marked, key, now);
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
    this.#touch(this.#local, key, entry);
  }

  /** Sets `key` as the newest entry of `map` and forgets the oldest beyond fallbackMaxSubjects. */
  #touch<V>(map: Map<string, V>, key: string, value: V): void {
    map.delete(key);
    map.set(key, value);
    while (map.size > this.#maxLocal) {
      const oldest = map.keys().next().value;
      if (oldest === undefined) break;
      map.delete(oldest);
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
