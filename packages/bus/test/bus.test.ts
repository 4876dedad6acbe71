import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { trace } from '@opentelemetry/api';
import { startTelemetry } from '@cairn/telemetry';
import type { AnyEvent } from '@cairn/events';
import { sampleEvent } from '@cairn/testing';
import { Bus } from '../src/index.js';

const telemetry = startTelemetry('bus-test', {});
const id = randomBytes(4).toString('hex');
let bus: Bus;

beforeAll(async () => {
  bus = await Bus.connect({
    url: process.env.NATS_URL ?? 'nats://127.0.0.1:4222',
    stream: `TEST_BUS_${id}`,
    subjectPrefix: `tbus_${id}`,
  });
});
afterAll(async () => {
  await bus.jsm.streams.delete(`TEST_BUS_${id}`);
  await bus.close();
  await telemetry.shutdown();
});

function collector(): {
  received: Array<{ event: AnyEvent; traceId: string; deliveries: number }>;
  until(n: number): Promise<void>;
} {
  const received: Array<{ event: AnyEvent; traceId: string; deliveries: number }> = [];
  return {
    received,
    until: async (n) => {
      const deadline = Date.now() + 10_000;
      while (received.length < n && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    },
  };
}

describe('Bus', () => {
  it('stores an event once when it is published twice with the same event id', async () => {
    const event = sampleEvent('key.created', 't_dup', { key_id: 'k' });
    const first = await bus.publish(event);
    const second = await bus.publish(event);
    expect(first.duplicate).toBe(false);
    expect(second).toEqual({ seq: first.seq, duplicate: true });
  });

  it('delivers to a durable consumer with the publisher’s trace context, and redelivers after a failure', async () => {
    const got = collector();
    let failOnce = true;
    const consumer = await bus.consume({
      durable: 'trace-test',
      types: ['asset.signed'],
      handler: async (event, msg) => {
        if (failOnce) {
          failOnce = false;
          throw new Error('transient');
        }
        const traceId = trace.getTracer('consumer').startActiveSpan('handle', (span) => {
          span.end();
          return span.spanContext().traceId;
        });
        got.received.push({ event, traceId, deliveries: msg.info.deliveryCount });
      },
    });
    const traceId = await trace.getTracer('test').startActiveSpan('publisher', async (span) => {
      await bus.publish(sampleEvent('asset.signed', 't_1', { asset_id: 'a_1' }));
      span.end();
      return span.spanContext().traceId;
    });
    await got.until(1);
    await consumer.stop();
    expect(got.received).toHaveLength(1);
    expect(got.received[0]!.event.data).toMatchObject({ asset_id: 'a_1' });
    expect(got.received[0]!.deliveries).toBe(2);
    // The consumer runs in the extracted context: a span it starts joins the publisher's trace.
    expect(traceId).not.toMatch(/^0+$/);
    expect(got.received[0]!.traceId).toBe(traceId);
  });

  it('drops a malformed or invalid event instead of redelivering it forever, and handles the next', async () => {
    const got = collector();
    const consumer = await bus.consume({
      durable: 'malformed-test',
      types: ['job.failed'],
      handler: async (event) => void got.received.push({ event, traceId: '', deliveries: 1 }),
    });
    await bus.publishRaw(bus.subject('job.failed'), '{"not":"an envelope"}', `bad-${id}`, {});
    await bus.publishRaw(bus.subject('job.failed'), 'not json at all', `bad-json-${id}`, {});
    // A whole envelope whose data is not what job.failed defines (no problem): dropped too, never handled.
    const { problem: _problem, ...incomplete } = sampleEvent('job.failed', 't_1').data;
    const invalid = { ...sampleEvent('job.failed', 't_1'), data: incomplete };
    await bus.publishRaw(bus.subject('job.failed'), JSON.stringify(invalid), invalid.event_id, {});
    await bus.publish(sampleEvent('job.failed', 't_1', { job_id: 'j_1' }));
    await got.until(1);
    await new Promise((r) => setTimeout(r, 300));
    const info = await bus.jsm.consumers.info(`TEST_BUS_${id}`, 'malformed-test');
    await consumer.stop();
    expect(got.received.map((r) => (r.event.type === 'job.failed' ? r.event.data.job_id : r.event.type))).toEqual([
      'j_1',
    ]);
    expect(info.num_ack_pending).toBe(0);
    expect(info.num_redelivered).toBe(0);
  });
});

describe('WorkQueue', () => {
  it('delivers each item to one worker, redelivers a failed one, and keeps it across a worker restart', async () => {
    const { WorkQueue } = await import('../src/index.js');
    const queue = await WorkQueue.open<{ n: number }>(bus, `jobs${id}`);
    const seen: Array<{ n: number; attempt: number }> = [];
    let failFirst = true;
    await queue.enqueue({ n: 1 }, `item-1-${id}`);
    await queue.enqueue({ n: 1 }, `item-1-${id}`); // a retried enqueue: stored once
    // A worker that dies mid-item (its connection drops before it acks): the item must come back.
    const doomedBus = await Bus.connect({
      url: process.env.NATS_URL ?? 'nats://127.0.0.1:4222',
      stream: `TEST_BUS_${id}`,
      subjectPrefix: `tbus_${id}`,
    });
    const doomedQueue = await WorkQueue.open<{ n: number }>(doomedBus, `jobs${id}`);
    let release: () => void = () => undefined;
    let picked = false;
    const doomed = await doomedQueue.consume({
      durable: 'workers',
      ackWaitMs: 1000,
      handler: () =>
        new Promise<void>((resolve) => {
          picked = true;
          release = resolve;
        }),
    });
    while (!picked) await new Promise((r) => setTimeout(r, 20));
    await doomedBus.nc.close();
    release();
    // Its connection is closed already (that is the point of the test), so stopping it may fail.
    await doomed.stop().catch(() => undefined);
    const second = await queue.consume({
      durable: 'workers',
      ackWaitMs: 1000,
      handler: async (item, ctx) => {
        if (failFirst) {
          failFirst = false;
          throw new Error('transient');
        }
        seen.push({ n: item.n, attempt: ctx.attempt });
      },
    });
    const deadline = Date.now() + 15_000;
    while (seen.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    await second.stop();
    expect(seen).toHaveLength(1);
    expect(seen[0]!.n).toBe(1);
    expect(seen[0]!.attempt).toBeGreaterThanOrEqual(3);
    const info = await bus.jsm.streams.info(queue.stream);
    expect(info.state.messages).toBe(0);
  }, 30_000);
});

describe('a consumer of several event types', () => {
  it('receives exactly those types (on NATS servers without filter_subjects)', async () => {
    const seen: Array<{ tenant: string; type: string }> = [];
    const consumer = await bus.consume({
      durable: 'several-types',
      types: ['asset.signed', 'job.failed'],
      handler: async (event) => void seen.push({ tenant: event.tenant_id, type: event.type }),
    });
    for (const type of ['asset.signed', 'key.created', 'job.failed', 'manifest.signed'] as const)
      await bus.publish(sampleEvent(type, 't_several', {}));
    const mine = () => seen.filter((e) => e.tenant === 't_several').map((e) => e.type);
    const deadline = Date.now() + 5000;
    while (mine().length < 2 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    // Give a wrongly delivered type the time to show up.
    await new Promise((r) => setTimeout(r, 200));
    await consumer.stop();
    expect(mine()).toEqual(['asset.signed', 'job.failed']);
    expect(seen.every((e) => e.type === 'asset.signed' || e.type === 'job.failed')).toBe(true);
    // The other types were acknowledged, not left to come back after the ack wait.
    const info = await bus.jsm.consumers.info(`TEST_BUS_${id}`, 'several-types');
    expect({ pending: info.num_pending, unacknowledged: info.num_ack_pending }).toEqual({
      pending: 0,
      unacknowledged: 0,
    });
  });
});
