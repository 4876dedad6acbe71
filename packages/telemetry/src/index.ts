export { startTelemetry, type TelemetryHandle } from './tracing.js';
export { ServiceMetrics } from './metrics.js';
