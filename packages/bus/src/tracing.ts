import { context, propagation, type Context } from '@opentelemetry/api';
import { headers as natsHeaders, type MsgHdrs } from '@nats-io/transport-node';

/** Writes the active trace context (W3C traceparent/tracestate) into NATS headers. */
export function injectTraceHeaders(target: MsgHdrs, ctx: Context = context.active()): MsgHdrs {
  propagation.inject(ctx, target, {
    set: (carrier, key, value) => carrier.set(key, value),
  });
  return target;
}

/** Reads a trace context from NATS headers, so a consumer's spans join the publisher's trace. */
export function extractTraceContext(source: MsgHdrs | undefined): Context {
  if (!source) return context.active();
  return propagation.extract(context.active(), source, {
    get: (carrier, key) => (carrier.has(key) ? carrier.get(key) : undefined),
    keys: (carrier) => carrier.keys(),
  });
}

export function newHeaders(): MsgHdrs {
  return natsHeaders();
}
