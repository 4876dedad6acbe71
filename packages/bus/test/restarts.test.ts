/**
 * Consumers against a NATS that goes away under them (docs/decisions/0018-bounded-shutdown.md): a private nats-server
 * with JetStream on a store of this file's own, SIGKILLed and started again. A consumer's stop must settle (it used to
 * handle and confirm every message it had fetched first, each confirmation waiting 5 s for a server that was gone, and
 * wait forever on a stuck handler), and no event may be lost across the stop and the restart.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '@cairn/logging';
import type { AnyEvent } from '@cairn/events';
import { freePort, sampleEvent, startPrivateNats, waitFor, type PrivateServer } from '@cairn/testing';
import { Bus, WorkQueue } from '../src/index.js';

let port: number;
let storeDir: string;
let nats: PrivateServer;
const buses: Bus[] = [];
let logLines: Array<Record<string, unknown>> = [];
const logger = createLogger({
  service: 'bus-restarts-test',
  level: 'warn',
  destination: { write: (line: string) => void logLines.push(JSON.parse(line) as Record<string, unknown>) },
});

beforeAll(async () => {
  port = await freePort();
  storeDir = await mkdtemp(join(tmpdir(), 'cairn-bus-restarts-'));
  nats = await startPrivateNats(port, storeDir);
});
afterEach(async () => {
  // NATS up again for the next test, whatever this one left behind.
  if (nats.child.exitCode !== null || nats.child.signalCode !== null) nats = await startPrivateNats(port, storeDir);
  // A bus whose server was killed for good may fail to drain; it is closed all the same.
  await Promise.all(buses.splice(0).map((bus) => bus.close(1000).catch(() => undefined)));
  logLines = [];
});
afterAll(async () => {
  await nats.kill();
  await rm(storeDir, { recursive: true, force: true });
});

let streams = 0;
async function connect(stream: string): Promise<Bus> {
  const bus = await Bus.connect({
    url: `nats://127.0.0.1:${port}`,
    stream,
    subjectPrefix: stream.toLowerCase(),
    logger,
  });
  buses.push(bus);
  return bus;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A consumer whose handler takes a little time (as a database write does), recording every event it handled. */
async function consumer(bus: Bus, handled: string[], options: { ackWaitMs?: number } = {}) {
  return bus.consume({
    durable: 'restarts',
    types: 'all',
    ackWaitMs: options.ackWaitMs ?? 1000,
    handler: async (event: AnyEvent) => {
      await pause(20);
      handled.push(event.event_id);
    },
  });
}

async function publishAll(bus: Bus, n: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const event = sampleEvent('asset.signed', 't_restarts', { asset_id: `a_${i}` });
    await bus.publish(event);
    ids.push(event.event_id);
  }
  return ids;
}

describe('a consumer when NATS goes away', () => {
  it('stops while NATS is down without handling what it had fetched; every event arrives after NATS is back', async () => {
    const bus = await connect(`RESTART_A_${(streams += 1)}`);
    const handled: string[] = [];
    const ids = await publishAll(bus, 150);
    const running = await consumer(bus, handled);
    await waitFor('the consumer under way', () => handled.length >= 5);
    await nats.kill();
    const before = handled.length;
    await running.stop(2000);
    // At most the one event in flight when stop was called: the rest of the fetched batch was left to JetStream.
    expect(handled.length - before).toBeLessThanOrEqual(1);
    expect(handled.length).toBeLessThan(ids.length);

    nats = await startPrivateNats(port, storeDir);
    const again = await consumer(await connect(bus.options.stream), handled);
    await waitFor('every event handled after the restart', () => ids.every((id) => handled.includes(id)), 30_000);
    await again.stop();
    expect(new Set(handled)).toEqual(new Set(ids));
  }, 60_000);

  it('resumes after NATS restarts under it, and its stop hands back the fetched batch for another consumer', async () => {
    const bus = await connect(`RESTART_B_${(streams += 1)}`);
    const handled: string[] = [];
    const running = await consumer(bus, handled);
    const first = await publishAll(bus, 20);
    await waitFor('the first events handled', () => handled.length >= 5);
    await nats.kill();
    await pause(500);
    nats = await startPrivateNats(port, storeDir);
    // The client reconnects by itself; publishing again proves the fleet's connection is back.
    const second = await waitFor(
      'a publish after the restart',
      () => publishAll(bus, 150).catch(() => undefined),
      30_000,
    );
    await waitFor(
      'events published after the restart handled',
      () => handled.some((id) => second.includes(id)),
      30_000,
    );
    const before = handled.length;
    await running.stop(2000);
    expect(handled.length - before).toBeLessThanOrEqual(1);

    const other = await consumer(await connect(bus.options.stream), handled);
    const all = [...first, ...second];
    await waitFor('every event handled by the next consumer', () => all.every((id) => handled.includes(id)), 30_000);
    await other.stop();
    expect(new Set(handled)).toEqual(new Set(all));
  }, 60_000);

  it('abandons a handler that never returns after the grace: logged by event id, handed back, redelivered at once', async () => {
    const bus = await connect(`RESTART_C_${(streams += 1)}`);
    const [stuckId] = await publishAll(bus, 1);
    let entered = false;
    // An ack wait longer than waitFor's 30 s: only the stop's hand-back (nak) brings the event to the next consumer.
    const ackWaitMs = 120_000;
    const stuck = await bus.consume({
      durable: 'restarts',
      types: 'all',
      ackWaitMs,
      // A handler waiting on a dependency that never answers.
      handler: () => ((entered = true), new Promise<void>(() => undefined)),
    });
    await waitFor('the handler entered', () => entered);
    await stuck.stop(300);
    expect(logLines).toContainEqual(
      expect.objectContaining({ level: 'error', durable: 'restarts', event_id: stuckId, grace_ms: 300 }),
    );
    const handled: string[] = [];
    const next = await consumer(await connect(bus.options.stream), handled, { ackWaitMs });
    await waitFor('the abandoned event redelivered', () => handled.includes(stuckId!), 30_000);
    await next.stop();
  }, 60_000);
});

describe('a work queue worker stopping with an item that never finishes', () => {
  it('gives up after the grace and hands the item back, so another worker runs it at once', async () => {
    const bus = await connect(`RESTART_D_${(streams += 1)}`);
    const queue = await WorkQueue.open<{ n: number }>(bus, 'restarts');
    await queue.enqueue({ n: 7 }, 'item-7');
    let entered = false;
    // Longer than waitFor's 30 s, as a sign job's two minutes: only the hand-back (nak) frees the item in time.
    const ackWaitMs = 120_000;
    const stuck = await queue.consume({
      durable: 'workers',
      ackWaitMs,
      logger,
      handler: () => ((entered = true), new Promise<void>(() => undefined)),
    });
    await waitFor('the item picked', () => entered);
    await stuck.stop(300);
    expect(logLines).toContainEqual(expect.objectContaining({ level: 'error', durable: 'workers', grace_ms: 300 }));
    const done: number[] = [];
    const other = await queue.consume({
      durable: 'workers',
      ackWaitMs,
      logger,
      handler: (item) => Promise.resolve(void done.push(item.n)),
    });
    await waitFor('the item run by the other worker', () => done.length > 0, 30_000);
    await other.stop();
    expect(done).toEqual([7]);
  }, 60_000);
});
