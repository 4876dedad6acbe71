import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

/** One Prometheus registry per service process, served at the ops port's /metrics. */
export class ServiceMetrics {
  readonly registry = new Registry();
  readonly httpRequestDuration: Histogram<'method' | 'route' | 'status'>;
  readonly eventsConsumed: Counter<'durable' | 'type' | 'outcome'>;
  readonly eventsPublished: Counter<'type'>;
  readonly grpcHandled: Counter<'method' | 'outcome'>;

  constructor(
    readonly service: string,
    options: { defaultMetrics?: boolean } = {},
  ) {
    this.registry.setDefaultLabels({ service });
    // The event-loop lag histogram samples once a second, not prom-client's 100 times: its 10 ms timer cost an idle
    // process more CPU than everything else it does. Lag past a second is always seen, shorter lag in proportion.
    if (options.defaultMetrics ?? true)
      collectDefaultMetrics({ register: this.registry, prefix: 'cairn_', eventLoopMonitoringPrecision: 1000 });
    this.httpRequestDuration = new Histogram({
      name: 'cairn_http_request_duration_seconds',
      help: 'HTTP request duration by route and status',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers: [this.registry],
    });
    this.eventsConsumed = new Counter({
      name: 'cairn_events_consumed_total',
      help: 'Events handled by durable consumers, by outcome (applied, duplicate, failed)',
      labelNames: ['durable', 'type', 'outcome'],
      registers: [this.registry],
    });
    this.grpcHandled = new Counter({
      name: 'cairn_grpc_server_handled_total',
      help: 'gRPC calls this process answered, by method and outcome (ok, or the cairn code of the error)',
      labelNames: ['method', 'outcome'],
      registers: [this.registry],
    });
    this.eventsPublished = new Counter({
      name: 'cairn_events_published_total',
      help: 'Events relayed from the outbox to JetStream',
      labelNames: ['type'],
      registers: [this.registry],
    });
  }

  render(): Promise<string> {
    return this.registry.metrics();
  }

  get contentType(): string {
    return this.registry.contentType;
  }
}
