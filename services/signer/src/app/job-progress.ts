import { z } from 'zod';
import type { StoredJobProgress } from '../db/assets-schema.js';
import type { SignProgressStage } from './sign/index.js';

/** A job row's progress is written at most this often, however often the sign reports. */
export const JOB_PROGRESS_INTERVAL_MS = 500;

/**
 * A sign job's progress onto its row, bounded: the latest report only (one value held), at most one write every
 * `intervalMs` and one at a time; the fraction never falls within the run, whatever a peer streams.
 */
export class JobProgressWriter {
  #latest: { stage: SignProgressStage; fraction: number } | undefined;
  #written: { stage: SignProgressStage; fraction: number } | undefined;
  #lastWriteAt = 0;
  #timer: NodeJS.Timeout | undefined;
  #inFlight: Promise<void> | undefined;
  #closed = false;

  constructor(
    private readonly write: (progress: StoredJobProgress) => Promise<void>,
    private readonly onError: (error: unknown) => void,
    private readonly intervalMs = JOB_PROGRESS_INTERVAL_MS,
  ) {}

  /** The sign's report (SignProgress). */
  readonly report = (stage: SignProgressStage, fraction: number): void => {
    if (this.#closed) return;
    const bounded = Number.isFinite(fraction) ? Math.min(1, Math.max(0, fraction)) : 0;
    const next = { stage, fraction: Math.max(bounded, this.#latest?.fraction ?? 0) };
    if (this.#latest && this.#latest.stage === next.stage && this.#latest.fraction === next.fraction) return;
    this.#latest = next;
    this.#schedule();
  };

  /** Stops writing: nothing is written after the returned promise settles (the job's end is written next). */
  async close(): Promise<void> {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#inFlight;
  }

  #schedule(): void {
    // A pending or running write picks the latest value up when it is due.
    if (this.#timer || this.#inFlight || this.#closed) return;
    const wait = Math.max(0, this.#lastWriteAt + this.intervalMs - Date.now());
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#flush();
    }, wait);
  }

  #flush(): void {
    const progress = this.#latest;
    if (!progress || progress === this.#written || this.#closed) return;
    this.#lastWriteAt = Date.now();
    this.#inFlight = this.write({ ...progress, updatedAt: new Date().toISOString() })
      .catch(this.onError)
      .finally(() => {
        this.#inFlight = undefined;
        this.#written = progress;
        if (this.#latest !== this.#written) this.#schedule();
      });
  }
}

const storedProgressSchema = z.object({
  stage: z.enum(['reading', 'watermarking', 'signing', 'storing']),
  fraction: z.number().min(0).max(1),
  updatedAt: z.iso.datetime({ offset: true }),
});

/** A job row's progress as the worker wrote it; undefined when there is none (or it is not one: never shown half). */
export function storedJobProgress(
  stored: unknown,
): { stage: SignProgressStage; fraction: number; updatedAt: Date } | undefined {
  const parsed = storedProgressSchema.safeParse(stored);
  return parsed.success ? { ...parsed.data, updatedAt: new Date(parsed.data.updatedAt) } : undefined;
}
