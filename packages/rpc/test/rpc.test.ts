import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { trace } from '@opentelemetry/api';
import { CairnError } from '@cairn/errors';
import { healthV1 } from '@cairn/proto';
import { startTelemetry } from '@cairn/telemetry';
import { createClient, HealthState, RpcServer, ServingStatus } from '../src/index.js';

const telemetry = startTelemetry('rpc-test', {});
let server: RpcServer;
let port: number;
const seenTraceIds: string[] = [];

beforeAll(async () => {
  server = new RpcServer();
  // The transport is exercised through the standard health protocol (stable), whose `service` field picks
  // the behaviour under test.
  server.add(healthV1.Health, {
    check: async (request) => {
      seenTraceIds.push(trace.getActiveSpan()?.spanContext().traceId ?? '');
      if (request.service === 'forbidden') throw new CairnError('cairn.auth.forbidden', 'not yours');
      if (request.service === 'boom') throw new Error('secret internals');
      if (request.service === 'slow') await new Promise((r) => setTimeout(r, 500));
      return { status: ServingStatus.SERVING };
    },
    watch: new HealthState().impl().watch,
  });
  port = await server.listen('127.0.0.1', 0);
});

afterAll(async () => {
  await server.shutdown(500);
  await telemetry.shutdown();
});

describe('rpc client and server', () => {
  it('round-trips typed messages', async () => {
    const client = createClient(healthV1.Health, `127.0.0.1:${port}`);
    expect(await client.check({ service: 'cairn.test' })).toMatchObject({ status: ServingStatus.SERVING });
    client.close();
  });

  it('carries the cairn code of a handler’s error to the caller', async () => {
    const client = createClient(healthV1.Health, `127.0.0.1:${port}`);
    await expect(client.check({ service: 'forbidden' })).rejects.toMatchObject({
      code: 'cairn.auth.forbidden',
      status: 403,
      message: 'not yours',
    });
    const hidden = await client.check({ service: 'boom' }).catch((e: unknown) => e as CairnError);
    expect(hidden).toMatchObject({ code: 'cairn.internal_error' });
    expect((hidden as CairnError).message).not.toContain('secret');
    client.close();
  });

  it('enforces the deadline', async () => {
    const client = createClient(healthV1.Health, `127.0.0.1:${port}`, { deadlineMs: 100 });
    await expect(client.check({ service: 'slow' })).rejects.toMatchObject({ code: 'cairn.unavailable' });
    client.close();
  });

  it('continues the caller’s trace on the server (traceparent in metadata)', async () => {
    const client = createClient(healthV1.Health, `127.0.0.1:${port}`);
    const tracer = trace.getTracer('test');
    const callerTraceId = await tracer.startActiveSpan('caller', async (span) => {
      await client.check({ service: 'traced' });
      span.end();
      return span.spanContext().traceId;
    });
    expect(callerTraceId).not.toMatch(/^0+$/);
    expect(seenTraceIds.at(-1)).toBe(callerTraceId);
    client.close();
  });

  it('retries while the server is UNAVAILABLE and succeeds once it is up', async () => {
    const late = new RpcServer();
    const health = new HealthState();
    health.set('', ServingStatus.SERVING);
    late.add(healthV1.Health, health.impl());
    // Find a free port, then start the server on it shortly after the first attempt.
    const probe = new RpcServer();
    const freePort = await probe.listen('127.0.0.1', 0);
    await probe.shutdown(100);
    const client = createClient(healthV1.Health, `127.0.0.1:${freePort}`, { retries: 6, deadlineMs: 5000 });
    const call = client.check({ service: '' });
    await new Promise((r) => setTimeout(r, 150));
    await late.listen('127.0.0.1', freePort);
    await expect(call).resolves.toMatchObject({ status: ServingStatus.SERVING });
    client.close();
    await late.shutdown(100);
  });

  it('reaches a peer that restarted, even while the channel is in its reconnect backoff', async () => {
    const start = async (port: number) => {
      const server = new RpcServer();
      const health = new HealthState();
      health.set('', ServingStatus.SERVING);
      server.add(healthV1.Health, health.impl());
      return { server, port: await server.listen('127.0.0.1', port) };
    };
    const first = await start(0);
    const client = createClient(healthV1.Health, `127.0.0.1:${first.port}`, { deadlineMs: 3000 });
    await expect(client.check({ service: '' })).resolves.toMatchObject({ status: ServingStatus.SERVING });
    await first.server.shutdown(100);
    // Calls while it is down push the channel's reconnect backoff to its ceiling.
    for (let i = 0; i < 4; i++)
      await expect(client.check({ service: '' }, { deadlineMs: 400 })).rejects.toMatchObject({
        code: 'cairn.unavailable',
      });
    const second = await start(first.port);
    await expect(client.check({ service: '' })).resolves.toMatchObject({ status: ServingStatus.SERVING });
    client.close();
    await second.server.shutdown(100);
  });
  it('does not retry a call its handler answered UNAVAILABLE: the work ran once', async () => {
    let calls = 0;
    const answered = new RpcServer();
    answered.add(healthV1.Health, {
      check: async () => {
        calls++;
        throw new CairnError('cairn.signer.unavailable', 'worker crashed');
      },
      watch: new HealthState().impl().watch,
    });
    const answeredPort = await answered.listen('127.0.0.1', 0);
    const client = createClient(healthV1.Health, `127.0.0.1:${answeredPort}`, { deadlineMs: 5000 });
    await expect(client.check({ service: '' })).rejects.toMatchObject({ code: 'cairn.signer.unavailable' });
    expect(calls).toBe(1);
    client.close();
    await answered.shutdown(100);
  });

  it('does not retry a non-idempotent call whose peer died mid-call, even when the peer is back at once', async () => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', fileURLToPath(new URL('./fixtures/crashing-server.ts', import.meta.url))],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    const lines = createInterface({ input: child.stdout });
    const firstLine = await new Promise<string>((resolve) => lines.once('line', resolve));
    const crashPort = Number(firstLine.replace('port ', ''));
    let calledInChild = 0;
    lines.on('line', (line) => {
      if (line === 'called') calledInChild++;
    });
    // As soon as the crashed peer is gone, a healthy one serves the same address: a retry would reach it.
    let calledAfter = 0;
    const replacement = new RpcServer();
    replacement.add(healthV1.Health, {
      check: async () => {
        calledAfter++;
        return { status: ServingStatus.SERVING };
      },
      watch: new HealthState().impl().watch,
    });
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const client = createClient(healthV1.Health, `127.0.0.1:${crashPort}`, { deadlineMs: 5000 });
    const call = client.check({ service: '' });
    await exited;
    await replacement.listen('127.0.0.1', crashPort);
    await expect(call).rejects.toMatchObject({ code: 'cairn.unavailable' });
    expect(calledInChild).toBe(1);
    expect(calledAfter).toBe(0);
    // The peer being back, the next call goes through.
    await expect(client.check({ service: '' })).resolves.toMatchObject({ status: ServingStatus.SERVING });
    client.close();
    await replacement.shutdown(100);
  });
});
