import { NodeSDK } from '@opentelemetry/sdk-node';
import { resourceFromAttributes } from '@opentelemetry/resources';
import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { notifySpanEnd } from './spans.js';

/**
 * Keeps spans real (sampled, with trace ids that propagate and reach logs) when nothing exports them: NodeSDK
 * registers no tracer provider at all without a span processor, which would make every trace id zero.
 */
const localOnly: SpanProcessor = {
  onStart: () => undefined,
  // In-process listeners (a benchmark's stage table) hear the spans nobody exports.
  onEnd: (span) => notifySpanEnd(span),
  forceFlush: async () => undefined,
  shutdown: async () => undefined,
};

export interface TelemetryHandle {
  shutdown(): Promise<void>;
}

let running: { sdk: NodeSDK; handle: TelemetryHandle } | undefined;

/**
 * Starts OpenTelemetry tracing for this process: a tracer provider, the async context manager and the W3C
 * propagator, so spans made by the rpc and bus packages join one trace across hops. Spans are exported over
 * OTLP when OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_TRACES_EXPORTER) is set, and kept local otherwise: trace ids
 * still reach logs and propagate. Once per process; later calls return the first handle.
 */
export function startTelemetry(service: string, env: NodeJS.ProcessEnv = process.env): TelemetryHandle {
  if (running) return running.handle;
  const exporting = Boolean(
    env.OTEL_EXPORTER_OTLP_ENDPOINT || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_TRACES_EXPORTER,
  );
  // Metrics are served by prom-client at /metrics and logs go to stdout; keep the SDK from adding OTLP ones.
  env.OTEL_METRICS_EXPORTER ??= 'none';
  env.OTEL_LOGS_EXPORTER ??= 'none';
  const sdk = new NodeSDK({
    resource: resourceFromAttributes({ 'service.name': `cairn-${service}`, 'service.namespace': 'cairn' }),
    instrumentations: [],
    ...(exporting ? {} : { spanProcessors: [localOnly] }),
  });
  sdk.start();
  const handle: TelemetryHandle = {
    shutdown: async () => {
      if (running?.handle !== handle) return;
      running = undefined;
      // Exporting the last spans failed (collector away) at exit: they are lost, and shutdown must still finish.
      await sdk.shutdown().catch(() => undefined);
    },
  };
  running = { sdk, handle };
  return handle;
}
