// Webhook delivery throughput: one local HTTP receiver behind 100 endpoints (one tenant, all subscribed to
// job.completed), N events published on the bus, each fanned out to every endpoint. Prints deliveries/s from
// the first publish to the last delivery accepted by the receiver, and the delivery latency percentiles.
//
//   pnpm bench:webhooks [--endpoints 100] [--events 30] [--in-flight 64]
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { Bus } from '@cairn/bus';
import { newId } from '@cairn/ids';
import { webhookV1 } from '@cairn/proto';
import { createClient } from '@cairn/rpc';
import { startService } from '@cairn/runtime';
import { createSandbox, sampleEvent } from '@cairn/testing';
import { webhookService } from '../src/service.js';

const { values } = parseArgs({
  options: {
    endpoints: { type: 'string', default: '100' },
    events: { type: 'string', default: '30' },
    'in-flight': { type: 'string', default: '64' },
  },
});
const ENDPOINTS = Number(values.endpoints);
const EVENTS = Number(values.events);
const TOTAL = ENDPOINTS * EVENTS;

const publishedAt = new Map<string, number>();
const latencies: number[] = [];
let received = 0;
let done: () => void = () => undefined;
const finished = new Promise<void>((resolve) => (done = resolve));
const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    const sent = publishedAt.get(String(req.headers['cairn-event-id']));
    if (sent !== undefined) latencies.push(performance.now() - sent);
    res.writeHead(200).end();
    if (++received === TOTAL) done();
  });
});
await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;

const sandbox = await createSandbox({
  WEBHOOK_MAX_IN_FLIGHT: String(values['in-flight']),
  WEBHOOK_POLL_INTERVAL_MS: '100',
  DATABASE_POOL_MAX: '20',
});
const service = await startService(webhookService(sandbox.env));
const client = createClient(webhookV1.WebhookService, `127.0.0.1:${service.grpcPort}`);
const bus = await Bus.connect({
  url: String(sandbox.env.NATS_URL),
  stream: String(sandbox.env.NATS_STREAM),
  subjectPrefix: String(sandbox.env.NATS_SUBJECT_PREFIX),
});
try {
  const tenantId = newId('tenant');
  for (let i = 0; i < ENDPOINTS; i++)
    await client.createEndpoint({
      tenantId,
      url: `${url}?e=${i}`,
      events: ['job.completed'],
      description: `bench ${i}`,
      payloadFormat: i % 2 ? 'b' : 'a',
    });
  const started = performance.now();
  for (let i = 0; i < EVENTS; i++) {
    const event = sampleEvent('job.completed', tenantId, { job_id: newId('job') });
    publishedAt.set(event.event_id, performance.now());
    await bus.publish(event);
  }
  await finished;
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const q = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor(p * latencies.length))]!.toFixed(0);
  console.log(
    `webhooks: ${TOTAL} deliveries (${EVENTS} events × ${ENDPOINTS} endpoints, in flight ≤ ${values['in-flight']}) in ${seconds.toFixed(2)} s`,
  );
  console.log(
    `webhooks: ${(TOTAL / seconds).toFixed(0)} deliveries/s; publish→receiver latency p50 ${q(0.5)} ms, p95 ${q(0.95)} ms, max ${q(1)} ms`,
  );
} finally {
  client.close();
  await bus.close();
  await service.stop();
  await sandbox.dispose();
  server.close();
}
