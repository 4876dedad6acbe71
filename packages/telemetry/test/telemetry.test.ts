import { afterAll, describe, expect, it } from '@jest/globals';
import { context, propagation, trace } from '@opentelemetry/api';
import { ServiceMetrics, startTelemetry } from '../src/index.js';

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
