import type { RequestHandler } from 'express';
import { context, propagation, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { newId } from '@cairn/ids';
import { runWithLogContext, type Logger } from '@cairn/logging';
import type { ServiceMetrics } from '@cairn/telemetry';
import './types.js';

const tracer = trace.getTracer('cairn-gateway');

/**
 * First middleware: a request id (X-Request-Id), a server span continuing any incoming traceparent, the log
 * context every later line carries, and one access log line and histogram sample when the response ends.
 * Client addresses are not logged (public verify must log no personal data).
 */
export function requestContext(logger: Logger, metrics: ServiceMetrics): RequestHandler {
  return (req, res, next) => {
    req.requestId = newId('request');
    res.set('X-Request-Id', req.requestId);
    const started = process.hrtime.bigint();
    const parent = propagation.extract(context.active(), req.headers);
    const span = tracer.startSpan(
      `${req.method} ${req.path}`,
      { kind: SpanKind.SERVER, attributes: { 'http.request.method': req.method } },
      parent,
    );
    res.on('finish', () => {
      const route = req.route ? `${req.baseUrl}${String((req.route as { path: unknown }).path)}` : 'unmatched';
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      metrics.httpRequestDuration.observe({ method: req.method, route, status: String(res.statusCode) }, seconds);
      span.setAttribute('http.route', route);
      span.setAttribute('http.response.status_code', res.statusCode);
      if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.updateName(`${req.method} ${route}`);
      span.end();
      logger.info(
        {
          request_id: req.requestId,
          tenant_id: req.auth?.tenant.tenantId,
          method: req.method,
          route,
          status: res.statusCode,
          duration_ms: Math.round(seconds * 1000),
        },
        'request',
      );
    });
    context.with(trace.setSpan(parent, span), () => runWithLogContext({ request_id: req.requestId }, next));
  };
}
