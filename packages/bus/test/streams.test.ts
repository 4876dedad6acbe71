/**
 * Stream replicas and size (NATS_STREAM_REPLICAS, NATS_STREAM_MAX_BYTES) against the machine's real, single-node
 * NATS: applied at creation and to existing streams, refused clearly where JetStream cannot do them, and a full
 * work queue refusing new items instead of dropping queued ones.
 */
import { afterAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { connect } from '@nats-io/transport-node';
import { DiscardPolicy, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { createLogger } from '@cairn/logging';
import { Bus, StreamSettingsError, WorkQueue, WorkQueueFullError, type BusOptions } from '../src/index.js';

const url = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const runId = randomBytes(4).toString('hex');
const buses: Bus[] = [];
const prefixes: string[] = [];
let admin: { close(): Promise<void>; jsm: JetStreamManager } | undefined;

async function jsm(): Promise<JetStreamManager> {
  if (!admin) {
    const nc = await connect({ servers: url });
    admin = { jsm: await jetstreamManager(nc), close: () => nc.close() };
  }
  return admin.jsm;
}

/** A stream name and subject prefix no other run or test uses. */
function fresh(label: string): Pick<BusOptions, 'stream' | 'subjectPrefix'> {
  const stream = `TEST_LIMITS_${runId}_${label}`;
  prefixes.push(stream);
  return { stream, subjectPrefix: `tlim_${runId}_${label}` };
}

async function open(options: Omit<BusOptions, 'url'>): Promise<Bus> {
  const bus = await Bus.connect({ url, ...options });
  buses.push(bus);
  return bus;
}

afterAll(async () => {
  for (const bus of buses) await bus.close();
  const manager = await jsm();
  const names: string[] = [];
  for await (const name of manager.streams.names()) if (prefixes.some((p) => name.startsWith(p))) names.push(name);
  for (const name of names) await manager.streams.delete(name);
  await admin?.close();
});

describe('stream limits', () => {
  it('creates the event stream and a work queue with the configured size (full: events discard old, work discards new)', async () => {
    const bus = await open({ ...fresh('create'), limits: { replicas: 1, maxBytes: 5 * 1024 ** 2 } });
    const queue = await WorkQueue.open<{ n: number }>(bus, 'jobs');
    const events = await (await jsm()).streams.info(bus.options.stream);
    const work = await (await jsm()).streams.info(queue.stream);
    expect(events.config).toMatchObject({ max_bytes: 5 * 1024 ** 2, num_replicas: 1, discard: DiscardPolicy.Old });
    expect(work.config).toMatchObject({ max_bytes: 5 * 1024 ** 2, num_replicas: 1, discard: DiscardPolicy.New });
  });

  it('brings an existing stream made without limits to the configured ones, and says what changed', async () => {
    const names = fresh('update');
    await open(names); // no limits: created with the server's defaults (unlimited)
    expect((await (await jsm()).streams.info(names.stream)).config.max_bytes).toBe(-1);

    const lines: Array<Record<string, unknown>> = [];
    const logger = createLogger({
      service: 'bus-test',
      destination: { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
    });
    await open({ ...names, logger, limits: { replicas: 1, maxBytes: 2 * 1024 ** 2 } });
    expect((await (await jsm()).streams.info(names.stream)).config.max_bytes).toBe(2 * 1024 ** 2);
    const changed = lines.find((l) => l.msg === 'stream settings changed to the configured ones');
    expect(changed).toMatchObject({ stream: names.stream, changes: { max_bytes: { from: -1, to: 2 * 1024 ** 2 } } });

    // A work queue made without limits likewise, its discard policy included (a full queue refuses new items).
    const before = await WorkQueue.open<{ n: number }>(buses.at(-2)!, 'jobs');
    expect((await (await jsm()).streams.info(before.stream)).config).toMatchObject({ max_bytes: -1, discard: 'old' });
    await WorkQueue.open<{ n: number }>(buses.at(-1)!, 'jobs');
    expect((await (await jsm()).streams.info(before.stream)).config).toMatchObject({
      max_bytes: 2 * 1024 ** 2,
      discard: DiscardPolicy.New,
    });

    // Unchanged settings: nothing to update, nothing logged.
    lines.length = 0;
    await open({ ...names, logger, limits: { replicas: 1, maxBytes: 2 * 1024 ** 2 } });
    expect(lines.filter((l) => l.msg === 'stream settings changed to the configured ones')).toHaveLength(0);
  });

  it('refuses replicas above 1 on a single NATS server, saying why, for a new stream and an existing one', async () => {
    const names = fresh('replicas');
    const refusal = Bus.connect({ url, ...names, limits: { replicas: 3, maxBytes: 1024 ** 2 } });
    await expect(refusal).rejects.toBeInstanceOf(StreamSettingsError);
    await expect(refusal).rejects.toThrow(
      /JetStream refused stream TEST_LIMITS_\w+ with NATS_STREAM_REPLICAS=3 .*replicas > 1 not supported in non-clustered mode .*needs a clustered JetStream/,
    );
    // The stream was not made at all.
    await expect((await jsm()).streams.info(names.stream)).rejects.toThrow(/stream not found/);

    // An R1 stream asked to become R3 on this server: never left silently at one copy.
    await open(names);
    await expect(Bus.connect({ url, ...names, limits: { replicas: 3, maxBytes: 1024 ** 2 } })).rejects.toThrow(
      /NATS_STREAM_REPLICAS=3 needs a clustered JetStream/,
    );
    expect((await (await jsm()).streams.info(names.stream)).config.num_replicas).toBe(1);
  });

  it('a full work queue refuses the new item and keeps every item queued before it', async () => {
    const bus = await open({ ...fresh('full'), limits: { replicas: 1, maxBytes: 4096 } });
    const queue = await WorkQueue.open<{ n: number; pad: string }>(bus, 'jobs');
    let queued = 0;
    let refusal: unknown;
    for (let n = 0; n < 100 && !refusal; n++) {
      try {
        await queue.enqueue({ n, pad: 'x'.repeat(200) }, `item-${n}`);
        queued++;
      } catch (error) {
        refusal = error;
      }
    }
    expect(refusal).toBeInstanceOf(WorkQueueFullError);
    expect(String(refusal)).toMatch(/work queue TEST_LIMITS_\w+_WORK_JOBS is full/);
    expect(queued).toBeGreaterThan(0);
    // Nothing queued earlier was dropped to make room.
    const state = (await (await jsm()).streams.info(queue.stream)).state;
    expect(state.messages).toBe(queued);
    expect(state.first_seq).toBe(1);
  });
});
