import { describe, expect, it } from '@jest/globals';
import { waitFor } from '@cairn/testing';
import { NewVerdicts } from '../src/app/new-verdicts.js';

const QUIET_MS = 20;

/** A queue on a clock the test moves (the queue still polls on real timers, every QUIET_MS). */
function setUp(options: { maxPending?: number; compute?: (id: string) => Promise<void> } = {}) {
  let clock = 1_000;
  const computed: string[] = [];
  const warnings: unknown[] = [];
  const verdicts = new NewVerdicts(
    async (id) => {
      await options.compute?.(id);
      computed.push(id);
    },
    {
      quietMs: QUIET_MS,
      maxPending: options.maxPending ?? 100,
      logger: { warn: (fields: unknown) => void warnings.push(fields) },
      now: () => clock,
    },
  );
  return {
    verdicts,
    computed,
    warnings,
    /** Time passes with no new sign. */
    pause: () => void (clock += QUIET_MS),
  };
}

/** A compute that records each id it starts and holds the ones `held` picks until `release` is called. */
function heldCompute(held: (id: string) => boolean) {
  let release!: () => void;
  const blocked = new Promise<void>((resolve) => (release = resolve));
  const started: string[] = [];
  const compute = async (id: string): Promise<void> => {
    started.push(id);
    if (held(id)) await blocked;
  };
  return { compute, started, release: () => release() };
}

/** Long enough for the queue's timers to have fired several times. */
const fewTimerRounds = () => new Promise((resolve) => setTimeout(resolve, QUIET_MS * 5));

describe('new assets’ stored verdicts wait for a pause in signing', () => {
  it('computes none while signs keep coming, then all of them in the order they were signed', async () => {
    const { verdicts, computed, pause } = setUp();
    verdicts.add('m1');
    verdicts.add('m2');
    verdicts.add('m3');
    await fewTimerRounds();
    expect(computed).toEqual([]);
    pause();
    await waitFor('the verdicts', () => computed.length === 3);
    expect(computed).toEqual(['m1', 'm2', 'm3']);
    await verdicts.close();
  });

  it('a sign that arrives while one verdict is computed holds the rest back until the next pause', async () => {
    const { compute, started, release } = heldCompute((id) => id === 'm1');
    const { verdicts, computed, pause } = setUp({ compute });
    verdicts.add('m1');
    verdicts.add('m2');
    pause();
    await waitFor('the first verdict to start', () => started.length === 1);
    verdicts.add('m3'); // a new sign
    release();
    await waitFor('the first verdict', () => computed.length === 1);
    await fewTimerRounds();
    expect(computed).toEqual(['m1']);
    pause();
    await waitFor('the rest', () => computed.length === 3);
    expect(computed).toEqual(['m1', 'm2', 'm3']);
    await verdicts.close();
  });

  it('keeps its backlog bounded: past maxPending the oldest are computed without a pause', async () => {
    const { verdicts, computed } = setUp({ maxPending: 2 });
    for (const id of ['m1', 'm2', 'm3', 'm4']) verdicts.add(id);
    await waitFor('the oldest two', () => computed.length === 2);
    await fewTimerRounds();
    expect(computed).toEqual(['m1', 'm2']);
    await verdicts.close();
  });

  it('an event delivered twice is computed once', async () => {
    const { verdicts, computed, pause } = setUp();
    verdicts.add('m1');
    verdicts.add('m1');
    pause();
    await waitFor('the verdict', () => computed.length === 1);
    await fewTimerRounds();
    expect(computed).toEqual(['m1']);
    await verdicts.close();
  });

  it('a verdict that fails is logged and the others are still computed', async () => {
    const { verdicts, computed, warnings, pause } = setUp({
      compute: async (id) => {
        if (id === 'm1') throw new Error('signer unavailable');
      },
    });
    verdicts.add('m1');
    verdicts.add('m2');
    pause();
    await waitFor('the second verdict', () => computed.length === 1);
    expect(computed).toEqual(['m2']);
    expect(warnings).toEqual([expect.objectContaining({ manifest_id: 'm1' })]);
    await verdicts.close();
  });

  it('on close, the verdict being computed finishes and the waiting ones are left to their first read', async () => {
    const { compute, started, release } = heldCompute(() => true);
    const { verdicts, computed, pause } = setUp({ compute });
    verdicts.add('m1');
    verdicts.add('m2');
    pause();
    await waitFor('the first verdict to start', () => started.length === 1);
    const closed = verdicts.close();
    release();
    await closed;
    expect(computed).toEqual(['m1']);
    verdicts.add('m3');
    pause();
    await fewTimerRounds();
    expect(started).toEqual(['m1']);
  });
});
