import { afterAll, describe, expect, it } from '@jest/globals';
import { context, propagation, SpanStatusCode, trace } from '@opentelemetry/api';
import { inSpan, onSpanEnd, ServiceMetrics, startTelemetry, type EndedSpan } from '../src/index.js';

const telemetry = startTelemetry('telemetry-test', {});
afterAll(() => telemetry.shutdown());

describe('startTelemetry', () => {
  it('makes real, propagatable trace contexts without an exporter configured', () => {
    const tracer = trace.getTracer('test');
    const carrier: Record<string, string> = {};
    let traceId = '';
    tracer.startActiveSpan('parent', (span) => {
      traceId = span.spanContext().traceId;
      propagation.inject(context.active(), carrier);
      span.end();
    });
    expect(traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(traceId).not.toMatch(/^0+$/);
    expect(carrier.traceparent).toContain(traceId);
    const extracted = propagation.extract(context.active(), carrier);
    expect(trace.getSpanContext(extracted)?.traceId).toBe(traceId);
  });
});

describe('inSpan and onSpanEnd', () => {
  it('gives a stage a child span of the active one and lets an in-process listener read it, failures marked', async () => {
    const ended: EndedSpan[] = [];
    const stop = onSpanEnd((span) => ended.push(span));
    let parentId = '';
    await trace.getTracer('test').startActiveSpan('request', async (span) => {
      parentId = span.spanContext().spanId;
      await inSpan('stage.ok', async () => 1);
      await expect(
        inSpan('stage.failing', async () => {
          throw new Error('refused');
        }),
      ).rejects.toThrow('refused');
      span.end();
    });
    stop();
    await inSpan('after.unsubscribe', async () => undefined);
    expect(ended.map((s) => s.name)).toEqual(['stage.ok', 'stage.failing', 'request']);
    expect(ended[0]!.parentSpanContext?.spanId).toBe(parentId);
    expect(ended[0]!.status.code).not.toBe(SpanStatusCode.ERROR);
    expect(ended[1]!.status.code).toBe(SpanStatusCode.ERROR);
  });
});

describe('ServiceMetrics', () => {
  it('renders Prometheus text with the service label', async () => {
    const metrics = new ServiceMetrics('gateway', { defaultMetrics: false });
    metrics.httpRequestDuration.observe({ method: 'GET', route: '/v1/recipes', status: '200' }, 0.012);
    const text = await metrics.render();
    const count = text.split('\n').find((line) => line.startsWith('cairn_http_request_duration_seconds_count{'));
    expect(count).toMatch(/\bservice="gateway"/);
    expect(count).toMatch(/\broute="\/v1\/recipes"/);
    expect(count).toMatch(/ 1$/);
  });
});
