import { SpanStatusCode, trace } from '@opentelemetry/api';
import type { ReadableSpan } from '@opentelemetry/sdk-trace-base';

const tracer = trace.getTracer('cairn-stages');

/**
 * Runs one stage of a request inside a span of its own (child of the active one), so a trace shows where the
 * time of a sign or verify goes between the gRPC hops: blob reads, Postgres round trips, pool waits, encodes.
 */
export function inSpan<T>(name: string, work: () => Promise<T>): Promise<T> {
  return tracer.startActiveSpan(name, async (span) => {
    try {
      return await work();
    } catch (error) {
      span.setStatus({ code: SpanStatusCode.ERROR });
      throw error;
    } finally {
      span.end();
    }
  });
}

/** A finished span as an in-process listener sees it. */
export type EndedSpan = ReadableSpan;
type Listener = (span: EndedSpan) => void;
const listeners = new Set<Listener>();

/**
 * Hears every span this process ends while nothing exports them (no OTLP endpoint): how a benchmark that runs
 * the fleet in its own process reads the stage times without a collector. Returns the unsubscribe.
 */
export function onSpanEnd(listener: Listener): () => void {
  listeners.add(listener);
  return () => listeners.delete(listener);
}

/** Called by the local span processor (tracing.ts). */
export function notifySpanEnd(span: EndedSpan): void {
  for (const listener of listeners) listener(span);
}
