import { describe, expect, it } from '@jest/globals';
import { every } from '../src/every.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('every', () => {
  it('skips the ticks that find a run still going (no backlog), and stop waits for the run in progress', async () => {
    let runs = 0;
    let release!: () => void;
    const blocked = new Promise<void>((resolve) => (release = resolve));
    let finished = false;
    const stop = every(
      5,
      async () => {
        runs++;
        await blocked;
        finished = true;
      },
      () => undefined, // the task does not fail here
    );
    // Many intervals pass while the first run is held.
    await sleep(100);
    expect(runs).toBe(1);
    const stopped = stop();
    let stopResolved = false;
    void stopped.then(() => (stopResolved = true));
    await sleep(20);
    expect(stopResolved).toBe(false);
    release();
    await stopped;
    expect(finished).toBe(true);
    // Stopped: no run after it, and none of the skipped ticks ran later.
    await sleep(50);
    expect(runs).toBe(1);
  });

  it('hands a failure to onError and keeps running', async () => {
    const errors: unknown[] = [];
    let runs = 0;
    const stop = every(
      5,
      async () => {
        runs++;
        throw new Error(`run ${runs}`);
      },
      (error) => errors.push(error),
    );
    await sleep(100);
    await stop();
    expect(runs).toBeGreaterThan(1);
    expect(errors.length).toBe(runs);
  });
});
