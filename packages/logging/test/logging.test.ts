import { describe, expect, it } from '@jest/globals';
import { Writable } from 'node:stream';
import { context, trace, TraceFlags } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { addLogContext, createLogger, runWithLogContext } from '../src/index.js';

function capture(): { lines: Array<Record<string, unknown>>; stream: Writable } {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean))
        lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { lines, stream };
}

describe('createLogger', () => {
  it('writes JSON with the request id and tenant of the request in progress', async () => {
    const { lines, stream } = capture();
    const log = createLogger({ service: 'gateway', destination: stream });
    await runWithLogContext({ request_id: 'req_1' }, async () => {
      await Promise.resolve();
      addLogContext({ tenant_id: 't_1' });
      log.info({ route: '/v1/recipes' }, 'served');
    });
    log.info('outside');
    expect(lines[0]).toMatchObject({
      service: 'gateway',
      level: 'info',
      request_id: 'req_1',
      tenant_id: 't_1',
      msg: 'served',
    });
    expect(lines[1]?.request_id).toBeUndefined();
  });

  it('adds the trace id of the active span', () => {
    const manager = new AsyncLocalStorageContextManager().enable();
    context.setGlobalContextManager(manager);
    try {
      const { lines, stream } = capture();
      const log = createLogger({ service: 'signer', destination: stream });
      const spanContext = {
        traceId: '4bf92f3577b34da6a3ce929d0e0e4736',
        spanId: '00f067aa0ba902b7',
        traceFlags: TraceFlags.SAMPLED,
      };
      context.with(trace.setSpanContext(context.active(), spanContext), () => log.info('in span'));
      log.info('no span');
      expect(lines[0]).toMatchObject({ trace_id: spanContext.traceId, span_id: spanContext.spanId });
      expect(lines[1]?.trace_id).toBeUndefined();
    } finally {
      context.disable();
    }
  });

  it('redacts secrets', () => {
    const { lines, stream } = capture();
    const log = createLogger({ service: 'gateway', destination: stream });
    log.info({ api_key: 'cairn_sk_secret', authorization: 'Bearer x' }, 'key made');
    expect(JSON.stringify(lines[0])).not.toContain('cairn_sk_secret');
    expect(JSON.stringify(lines[0])).not.toContain('Bearer x');
  });
});
