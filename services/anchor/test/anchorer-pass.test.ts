// The batcher's loop (app/anchorer.ts, pass) over a recording fake of its store: which statements a pass runs when
// nothing is due and when a batch is. test/anchor-api.test.ts, anchor.test.ts and confirmations.test.ts run the same
// loop through the real service, Postgres and a chain.
import { describe, expect, it } from '@jest/globals';
import { createLogger } from '@cairn/logging';
import { Backoff } from '@cairn/runtime';
import { Anchorer } from '../src/app/anchorer.js';
import type { BatchRecords, ChainWriter } from '../src/app/ports.js';

type Outlook = { openClosesInMs: number | null; dueInMs: number | null };

/** A store whose batches are described by `outlooks` (one per outlook read), with no batch to seal, watch or send. */
function recordingStore(outlooks: Outlook[]): { store: BatchRecords; calls: string[] } {
  const calls: string[] = [];
  const answers: Partial<Record<keyof BatchRecords, unknown>> = {
    outlook: () => outlooks.shift() ?? { openClosesInMs: null, dueInMs: null },
    closeAged: () => undefined,
    closedWithoutRoot: () => [],
    duePending: () => [],
    dueClosed: () => [],
    withSenderLock: async (fn: () => Promise<void>) => {
      await fn();
      return true;
    },
  };
  const store = new Proxy({} as BatchRecords, {
    get: (_target, name: string) => {
      const answer = answers[name as keyof BatchRecords];
      if (typeof answer !== 'function') throw new Error(`the pass used ${name}, which this test does not expect`);
      return async (...args: unknown[]) => {
        calls.push(name);
        return (answer as (...a: unknown[]) => unknown)(...args);
      };
    },
  });
  return { store, calls };
}

function anchorerOver(store: BatchRecords): Anchorer {
  return new Anchorer({
    store,
    chain: {} as ChainWriter, // nothing to send or watch: never called
    logger: createLogger({ service: 'anchor-test', level: 'silent' }),
    confirmations: 1,
    batchMaxAgeMs: 5000,
    retryMaxMs: 30_000,
    pollMs: 500,
    idle: new Backoff(500, 30_000),
    enqueueEvent: async () => undefined,
  });
}

describe('a pass of the anchor batcher', () => {
  it('with no batch, or an open one still filling, reads when the next is due and nothing else', async () => {
    const { store, calls } = recordingStore([
      { openClosesInMs: null, dueInMs: null },
      { openClosesInMs: 3200, dueInMs: null },
    ]);
    const anchorer = anchorerOver(store);
    expect(await anchorer.pass()).toBe(1000); // no batch: the idle back-off, doubling from its base
    expect(await anchorer.pass()).toBe(3200); // sleeps until the open batch is due to close
    expect(calls).toEqual(['outlook', 'outlook']);
  });

  it('runs the tick, under the sender lock, when a batch is due to close or to be watched', async () => {
    const { store, calls } = recordingStore([
      { openClosesInMs: 0, dueInMs: null },
      { openClosesInMs: null, dueInMs: 0 },
      { openClosesInMs: null, dueInMs: 0 },
      { openClosesInMs: null, dueInMs: null },
    ]);
    const anchorer = anchorerOver(store);
    expect(await anchorer.pass()).toBe(500); // closed, sealed and sent: watched every poll
    expect(await anchorer.pass()).toBe(1000); // anchored, no batch left: the idle back-off
    const tick = ['closeAged', 'closedWithoutRoot', 'withSenderLock', 'duePending', 'dueClosed'];
    expect(calls).toEqual(['outlook', ...tick, 'outlook', 'outlook', ...tick, 'outlook']);
  });
});
