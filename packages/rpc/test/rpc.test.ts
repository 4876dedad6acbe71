import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { trace } from '@opentelemetry/api';
import { CairnError } from '@cairn/errors';
import { healthV1, watermarkV1 } from '@cairn/proto';
import { startTelemetry } from '@cairn/telemetry';
import { createClient, HealthState, RpcServer, ServingStatus, type ImplOf } from '../src/index.js';

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

  describe('a server stream whose peer goes away (CallOptions.retryWithinMs)', () => {
    type WatermarkImpl = ImplOf<typeof watermarkV1.WatermarkService>;
    type StreamHandler = WatermarkImpl['embedVideoWithProgress'];
    const video = { tenantId: 't_1', watermarkId: 'w_1', assetId: 'a_1', encoded: new Uint8Array([1]) };
    /**
     * A watermark server whose EmbedVideoWithProgress (declared IDEMPOTENT) is `stream`; its other methods are
     * never called here. Answers the server and its port.
     */
    const serveStream = async (stream: StreamHandler, port = 0) => {
      const impl = Object.fromEntries(
        watermarkV1.WatermarkService.methods.map((m) => [
          m.localName,
          () => {
            throw new CairnError('cairn.internal_error', `${m.name} is not served here`);
          },
        ]),
      ) as unknown as WatermarkImpl;
      const server = new RpcServer();
      server.add(watermarkV1.WatermarkService, { ...impl, embedVideoWithProgress: stream });
      return { server, port: await server.listen('127.0.0.1', port) };
    };
    const progress = (fraction: number) => ({ update: { case: 'progress' as const, value: { fraction } } });
    const result = { update: { case: 'result' as const, value: { payloadHex: 'ab', mediaType: 'video/mp4' } } };
    const read = async (stream: AsyncIterable<watermarkV1.EmbedVideoWithProgressResponse>) => {
      const seen: string[] = [];
      for await (const { update } of stream)
        seen.push(update.case === 'progress' ? `progress ${update.value.fraction}` : `${update.case}`);
      return seen;
    };

    it('opens an idempotent stream again when its draining peer answered cairn.unavailable mid-stream', async () => {
      let calls = 0;
      const { server, port } = await serveStream(async function* () {
        calls++;
        yield progress(0.25);
        if (calls === 1) throw new CairnError('cairn.unavailable', 'shutting down; retry');
        yield progress(0.5);
        yield result;
      });
      const client = createClient(watermarkV1.WatermarkService, `127.0.0.1:${port}`);
      // The caller reads the cut stream, then the new one from its start.
      await expect(
        read(client.embedVideoWithProgress({ video }, { deadlineMs: 5000, retryWithinMs: 3000 })),
      ).resolves.toEqual(['progress 0.25', 'progress 0.25', 'progress 0.5', 'result']);
      expect(calls).toBe(2);
      // Without a window, the cut is the caller's.
      calls = 0;
      await expect(read(client.embedVideoWithProgress({ video }, { deadlineMs: 5000 }))).rejects.toMatchObject({
        code: 'cairn.unavailable',
      });
      expect(calls).toBe(1);
      client.close();
      await server.shutdown(100);
    });

    it('waits for a peer that restarted on the same address, then reads the new stream', async () => {
      const cut: RpcServer[] = [];
      const first = await serveStream(async function* () {
        yield progress(0.1);
        // The process goes away mid-stream (a restart): its connections are cut.
        setImmediate(() => void cut[0]?.shutdown(0));
        await new Promise(() => undefined);
      });
      cut.push(first.server);
      const client = createClient(watermarkV1.WatermarkService, `127.0.0.1:${first.port}`);
      const reading = read(client.embedVideoWithProgress({ video }, { deadlineMs: 10_000, retryWithinMs: 8000 }));
      await new Promise((r) => setTimeout(r, 500));
      const second = await serveStream(async function* () {
        yield progress(0.2);
        yield result;
      }, first.port);
      await expect(reading).resolves.toEqual(['progress 0.1', 'progress 0.2', 'result']);
      client.close();
      await second.server.shutdown(100);
    });

    it('gives up once the window has passed without the peer', async () => {
      const probe = new RpcServer();
      const nobody = await probe.listen('127.0.0.1', 0);
      await probe.shutdown(100);
      const client = createClient(watermarkV1.WatermarkService, `127.0.0.1:${nobody}`);
      await expect(
        read(client.embedVideoWithProgress({ video }, { deadlineMs: 10_000, retryWithinMs: 600 })),
      ).rejects.toMatchObject({ code: 'cairn.unavailable' });
      client.close();
    });

    it('carries a stream handler’s error to the caller at once, its cairn code and detail included', async () => {
      const { server, port } = await serveStream(async function* () {
        yield progress(0.5);
        throw new CairnError('cairn.validation.invalid_body', 'the video could not be decoded');
      });
      const client = createClient(watermarkV1.WatermarkService, `127.0.0.1:${port}`);
      // No deadline: an error that never reached the caller would hang it (the test's timeout), not pass.
      await expect(read(client.embedVideoWithProgress({ video }, { retryWithinMs: 3000 }))).rejects.toMatchObject({
        code: 'cairn.validation.invalid_body',
        message: 'the video could not be decoded',
      });
      client.close();
      await server.shutdown(100);
    });

    it('never opens again a stream of a method with effects that its handler answered', async () => {
      let calls = 0;
      const answered = new RpcServer();
      answered.add(healthV1.Health, {
        check: async () => ({ status: ServingStatus.SERVING }),
        // Health.Watch declares no idempotency level.
        watch: async function* () {
          calls++;
          yield { status: ServingStatus.SERVING };
          throw new CairnError('cairn.unavailable', 'shutting down; retry');
        },
      });
      const answeredPort = await answered.listen('127.0.0.1', 0);
      const client = createClient(healthV1.Health, `127.0.0.1:${answeredPort}`);
      const seen: ServingStatus[] = [];
      await expect(
        (async () => {
          for await (const message of client.watch({ service: '' }, { retryWithinMs: 3000 })) seen.push(message.status);
        })(),
      ).rejects.toMatchObject({ code: 'cairn.unavailable' });
      expect(seen).toEqual([ServingStatus.SERVING]);
      expect(calls).toBe(1);
      client.close();
      await answered.shutdown(100);
    });
  });
});
