/**
 * The wait of a background loop between passes: `baseMs` after a pass that found work, doubling after each pass
 * that found none, up to `maxMs`. An idle service then looks rarely; a busy one as often as before.
 */
export class Backoff {
  private current: number;

  constructor(
    readonly baseMs: number,
    readonly maxMs: number,
  ) {
    if (!(baseMs > 0 && maxMs >= baseMs)) throw new Error(`backoff needs 0 < baseMs <= maxMs (${baseMs}, ${maxMs})`);
    this.current = baseMs;
  }

  /** The wait after a pass. */
  next(foundWork: boolean): number {
    this.current = foundWork ? this.baseMs : Math.min(this.maxMs, this.current * 2);
    return this.current;
  }

  /** Work is on its way (an enqueue, a wake-up): the next wait is `baseMs` again. */
  reset(): void {
    this.current = this.baseMs;
  }
}

export interface WakeableLoop {
  /** Asks for a pass within `withinMs` (0: now); a pass already due sooner is left alone. */
  wake(withinMs?: number): void;
  /** No pass after this one; waits for a pass in progress. */
  stop(): Promise<void>;
}

/**
 * Runs `pass` now, then again after the wait it answers (ms), or sooner when woken; never two at once. A pass
 * that throws is handed to `onError` and followed by another after `retryMs`. The timer is unref'd: it never
 * keeps a process alive on its own.
 */
export function wakeableLoop(
  pass: () => Promise<number>,
  onError: (error: unknown) => void,
  retryMs: number,
): WakeableLoop {
  let timer: NodeJS.Timeout | undefined;
  /** When the next pass runs (Infinity while one runs or none is scheduled). */
  let dueAt = Infinity;
  let running: Promise<void> | undefined;
  /** The soonest wake asked for while a pass ran: it bounds the wait that pass answers. */
  let wokenWithin = Infinity;
  let stopped = false;

  const schedule = (delayMs: number) => {
    if (stopped) return;
    clearTimeout(timer);
    const delay = Math.max(0, delayMs);
    dueAt = Date.now() + delay;
    timer = setTimeout(run, delay);
    timer.unref();
  };
  const run = () => {
    if (stopped || running) return;
    clearTimeout(timer);
    dueAt = Infinity;
    wokenWithin = Infinity;
    running = pass()
      .then(
        (waitMs) => waitMs,
        (error: unknown) => {
          onError(error);
          return retryMs;
        },
      )
      .then((waitMs) => {
        running = undefined;
        schedule(Math.min(waitMs, wokenWithin));
      });
  };
  run();
  return {
    wake(withinMs = 0) {
      if (stopped) return;
      if (running) wokenWithin = Math.min(wokenWithin, withinMs);
      else if (dueAt > Date.now() + withinMs) schedule(withinMs);
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
