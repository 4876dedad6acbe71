export { startTelemetry, type TelemetryHandle } from './tracing.js';
export { ServiceMetrics } from './metrics.js';
export { inSpan, onSpanEnd, type EndedSpan } from './spans.js';
export { SpanKind } from '@opentelemetry/api';
