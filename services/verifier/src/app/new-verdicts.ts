import type { Logger } from '@cairn/logging';

export interface NewVerdictsOptions {
  /** A new asset's verdict waits until no asset has been signed for this long (0: computed at once). */
  quietMs: number;
  /** Past this many waiting, the oldest are computed even while signs go on, so the backlog stays bounded. */
  maxPending: number;
  logger: Pick<Logger, 'warn'>;
  /** Milliseconds on a monotonic clock (tests set their own). */
  now?: () => number;
}

/**
 * The stored verdicts of newly signed assets (asset.signed), computed one at a time once signing pauses. Each is a
 * whole verify (the signer's copy read, c2pa-rs, the watermark search, OCSP, the anchor, the record): computed at
 * once it ran beside the next sign and, at one sign at a time, about doubled that sign's latency (docs/performance.md).
 * Nobody waits on these: a verdict still waiting here when somebody asks for it is computed on that read (as when
 * this process stops before it got to it; the event is acknowledged when it is queued here).
 */
export class NewVerdicts {
  /** Manifest ids in the order their assets were signed (a Set: an event delivered twice is computed once). */
  readonly #pending = new Set<string>();
  #lastSignedAt = 0;
  #timer: NodeJS.Timeout | undefined;
  #draining: Promise<void> | undefined;
  #closed = false;
  readonly #now: () => number;

  constructor(
    private readonly compute: (manifestId: string) => Promise<void>,
    private readonly options: NewVerdictsOptions,
  ) {
    this.#now = options.now ?? (() => performance.now());
  }

  /** A new asset was signed: its verdict is computed after the next pause in signing. */
  add(manifestId: string): void {
    if (this.#closed) return;
    this.#lastSignedAt = this.#now();
    this.#pending.delete(manifestId);
    this.#pending.add(manifestId);
    this.#schedule();
  }

  /** Waiting verdicts (they are computed on their first read instead); the one being computed is finished. */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#pending.clear();
    await this.#draining;
  }

  #due(): boolean {
    return this.#pending.size > this.options.maxPending || this.#now() - this.#lastSignedAt >= this.options.quietMs;
  }

  #schedule(): void {
    if (this.#closed || this.#draining || this.#pending.size === 0) return;
    clearTimeout(this.#timer);
    const wait = this.#due() ? 0 : this.#lastSignedAt + this.options.quietMs - this.#now();
    this.#timer = setTimeout(
      () => {
        this.#timer = undefined;
        this.#drain();
      },
      Math.max(0, wait),
    );
    this.#timer.unref();
  }

  #drain(): void {
    if (this.#closed || this.#draining) return;
    this.#draining = (async () => {
      // Re-checked before each verdict: a sign that arrives meanwhile pauses the rest until signing pauses again.
      while (!this.#closed && this.#due()) {
        const next = this.#pending.values().next();
        if (next.done) break;
        this.#pending.delete(next.value);
        await this.compute(next.value).catch((error: unknown) =>
          this.options.logger.warn({ err: error, manifest_id: next.value }, 'could not compute a new asset’s verdict'),
        );
      }
    })().finally(() => {
      this.#draining = undefined;
      this.#schedule();
    });
  }
}
