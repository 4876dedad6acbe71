import { AsyncLocalStorage } from 'node:async_hooks';
import { trace } from '@opentelemetry/api';
import { pino, type DestinationStream, type Logger, type LoggerOptions } from 'pino';

export type { Logger };

/** Per-request fields that every log line written inside the request carries. */
export interface LogContext {
  request_id?: string;
  tenant_id?: string;
}

const contextStore = new AsyncLocalStorage<LogContext>();

export function runWithLogContext<T>(context: LogContext, fn: () => T): T {
  return contextStore.run({ ...contextStore.getStore(), ...context }, fn);
}

/** Adds fields to the current request's context (e.g. tenant_id once the key is authenticated). */
export function addLogContext(fields: LogContext): void {
  const store = contextStore.getStore();
  if (store) Object.assign(store, fields);
}

export function currentLogContext(): LogContext {
  return { ...contextStore.getStore() };
}

function traceFields(): { trace_id?: string; span_id?: string } {
  const span = trace.getActiveSpan();
  if (!span) return {};
  const { traceId, spanId } = span.spanContext();
  // An unsampled no-op span has an all-zero id: not worth printing.
  if (/^0+$/.test(traceId)) return {};
  return { trace_id: traceId, span_id: spanId };
}

export interface CreateLoggerOptions {
  service: string;
  level?: LoggerOptions['level'];
  destination?: DestinationStream;
}

/** JSON logs (pino) with service, request_id and trace_id on every line written within a request. */
export function createLogger({ service, level = 'info', destination }: CreateLoggerOptions): Logger {
  const options: LoggerOptions = {
    level,
    base: { service },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label) => ({ level: label }) },
    mixin: () => ({ ...contextStore.getStore(), ...traceFields() }),
    redact: {
      paths: ['authorization', 'req.headers.authorization', 'api_key', '*.api_key', 'secret', '*.secret'],
      censor: '[redacted]',
    },
  };
  return destination ? pino(options, destination) : pino(options);
}
