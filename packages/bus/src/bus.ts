import { context } from '@opentelemetry/api';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import {
  AckPolicy,
  DeliverPolicy,
  RetentionPolicy,
  jetstream,
  jetstreamManager,
  type JetStreamClient,
  type JetStreamManager,
  type JsMsg,
} from '@nats-io/jetstream';
import type { Logger } from '@cairn/logging';
import { parseEvent, type AnyEvent, type EventOf, type EventType } from '@cairn/events';
import { backoffMs, handBack, serve, type RunningConsumer } from './serve.js';
import { extractTraceContext, injectTraceHeaders, newHeaders } from './tracing.js';
import { ensureStream, type EnsureStreamOptions, type StreamLimits, type StreamRole } from './streams.js';

export { DEFAULT_STOP_GRACE_MS, type RunningConsumer } from './serve.js';

export interface BusOptions {
  url: string;
  /** JetStream stream holding every event. */
  stream: string;
  /** Subjects are `<prefix>.<event type>`; tests use a unique prefix so runs never see each other. */
  subjectPrefix: string;
  name?: string;
  logger?: Logger;
  /** The service's NATS identity (one user per service, see permissions.ts); absent on a server without auth. */
  user?: string;
  password?: string;
  token?: string;
  /** Where request replies arrive; a service's user may subscribe only to its own (permissions.ts inboxPrefix). */
  inboxPrefix?: string;
  /**
   * Replicas and size of every stream this bus creates (the event stream, the work queues), applied to existing
   * ones too. Services always give them (NATS_STREAM_REPLICAS, NATS_STREAM_MAX_BYTES); absent, streams get the
   * server's defaults and existing ones are left alone (tests and tools joining a service's stream).
   */
  limits?: StreamLimits;
}

export interface ConsumerOptions<T extends EventType = EventType> {
  /** Durable name: one per consuming service and purpose, e.g. `audit-log`. */
  durable: string;
  types: ReadonlyArray<T> | 'all';
  /** Gets only events of `types`, parsed and validated by their @cairn/events schema. */
  handler: (event: EventOf<T>, msg: JsMsg) => Promise<void>;
  /** Redeliveries before the message is dropped with an error log. */
  maxDeliver?: number;
  ackWaitMs?: number;
}

const SECOND_NS = 1_000_000_000;

export class Bus {
  private readonly consumers = new Set<RunningConsumer>();

  private constructor(
    readonly nc: NatsConnection,
    readonly js: JetStreamClient,
    readonly jsm: JetStreamManager,
    readonly options: BusOptions,
  ) {}

  static async connect(options: BusOptions): Promise<Bus> {
    const nc = await connect({
      servers: options.url,
      name: options.name,
      maxReconnectAttempts: -1,
      ...(options.user ? { user: options.user, pass: options.password } : {}),
      ...(options.token ? { token: options.token } : {}),
      ...(options.inboxPrefix ? { inboxPrefix: options.inboxPrefix } : {}),
    });
    try {
      const jsm = await jetstreamManager(nc);
      const bus = new Bus(nc, jetstream(nc), jsm, options);
      await bus.ensureStream();
      return bus;
    } catch (error) {
      // A refused stream ends the start-up: the connection must not keep the process alive.
      await nc.close().catch(() => undefined); // closing after a failure: the first error is the one to report
      throw error;
    }
  }

  subject(type: EventType): string {
    return `${this.options.subjectPrefix}.${type}`;
  }

  /**
   * Creates the event stream if missing, else brings its replicas and size to the configured ones. Safe to call
   * from every replica of every service.
   */
  async ensureStream(): Promise<void> {
    await this.ensureStreamOf('events', {
      name: this.options.stream,
      subjects: [`${this.options.subjectPrefix}.>`],
      retention: RetentionPolicy.Limits,
      max_age: 7 * 24 * 3600 * SECOND_NS,
      duplicate_window: 120 * SECOND_NS,
    });
  }

  /** A stream of this bus (the event stream or a work queue's), with the bus's limits. */
  async ensureStreamOf(role: StreamRole, config: EnsureStreamOptions['config']): Promise<void> {
    await ensureStream({
      jsm: this.jsm,
      config,
      role,
      ...(this.options.limits ? { limits: this.options.limits } : {}),
      clustered: Boolean(this.nc.info?.cluster),
      ...(this.options.logger ? { logger: this.options.logger } : {}),
    });
  }

  /**
   * Publishes an event. The event id is the JetStream message id, so republishing the same event (an outbox
   * retry) within the duplicate window is stored once.
   */
  async publish(
    event: AnyEvent,
    extraHeaders: Record<string, string> = {},
  ): Promise<{ seq: number; duplicate: boolean }> {
    const hdrs = injectTraceHeaders(newHeaders());
    for (const [k, v] of Object.entries(extraHeaders)) hdrs.set(k, v);
    hdrs.set('Cairn-Event-Type', event.type);
    const ack = await this.js.publish(this.subject(event.type), JSON.stringify(event), {
      msgID: event.event_id,
      headers: hdrs,
    });
    return { seq: ack.seq, duplicate: ack.duplicate };
  }

  /** Publishes a pre-rendered subject/body (used by the outbox relay, which stored both at write time). */
  async publishRaw(subject: string, body: string, msgId: string, headerValues: Record<string, string>): Promise<void> {
    const hdrs = newHeaders();
    for (const [k, v] of Object.entries(headerValues)) hdrs.set(k, v);
    await this.js.publish(subject, body, { msgID: msgId, headers: hdrs });
  }

  /**
   * Starts a durable pull consumer. A handler that throws gets the message redelivered with backoff; a
   * message that is not JSON, or not an event its type's schema (@cairn/events) accepts, is logged and
   * terminated (redelivering it cannot help) and never reaches the handler.
   */
  async consume<T extends EventType>(options: ConsumerOptions<T>): Promise<RunningConsumer> {
    // One filter subject: several (filter_subjects) needs NATS 2.10; a consumer of several types takes the
    // whole prefix and acknowledges the other types without handling them.
    const wanted = options.types === 'all' ? null : new Set<string>(options.types);
    // Under the shared prefix every event arrives: another type is told by its subject and acknowledged unread.
    const wantedSubjects = options.types === 'all' ? null : new Set(options.types.map((type) => this.subject(type)));
    const filterSubject =
      options.types !== 'all' && options.types.length === 1
        ? this.subject(options.types[0]!)
        : `${this.options.subjectPrefix}.>`;
    const config = {
      durable_name: options.durable,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      ack_wait: (options.ackWaitMs ?? 30_000) * 1_000_000,
      max_deliver: options.maxDeliver ?? 20,
      filter_subject: filterSubject,
    };
    try {
      await this.jsm.consumers.info(this.options.stream, options.durable);
      await this.jsm.consumers.update(this.options.stream, options.durable, config);
    } catch {
      await this.jsm.consumers.add(this.options.stream, config);
    }
    const consumer = await this.js.consumers.get(this.options.stream, options.durable);
    const log = this.options.logger;
    const handle = async (msg: JsMsg, abandoned: AbortSignal): Promise<void> => {
      if (wantedSubjects && !wantedSubjects.has(msg.subject)) {
        msg.ack();
        return;
      }
      let json: unknown;
      try {
        json = msg.json();
      } catch (error) {
        log?.error({ err: error, subject: msg.subject, durable: options.durable }, 'malformed event dropped');
        // No reason text: nats-server 2.9 does not understand `+TERM <reason>` and leaves the message pending.
        msg.term();
        return;
      }
      const parsed = parseEvent(json);
      if (!parsed.ok) {
        log?.error(
          {
            err: parsed.error,
            subject: msg.subject,
            durable: options.durable,
            event_id: parsed.eventId,
            type: parsed.type,
          },
          'invalid event dropped',
        );
        msg.term();
        return;
      }
      const event = parsed.event;
      if (wanted && !wanted.has(event.type)) {
        msg.ack();
        return;
      }
      try {
        await context.with(extractTraceContext(msg.headers), () => options.handler(event as EventOf<T>, msg));
      } catch (error) {
        const attempt = msg.info.deliveryCount;
        if (abandoned.aborted) {
          // Its stop gave up on it and handed the event back; failing now (its service fenced off) is expected.
          log?.debug({ err: error, event_id: event.event_id, durable: options.durable }, 'abandoned handler ended');
          return;
        }
        log?.warn(
          { err: error, event_id: event.event_id, type: event.type, attempt, durable: options.durable },
          'event handler failed; will retry',
        );
        handBack(
          msg,
          { label: { durable: options.durable }, ...(log ? { logger: log } : {}) },
          backoffMs(250, 7, attempt),
        );
        return;
      }
      // Confirmed before the next message: a stopped consumer has settled on the server every event it handled.
      await msg
        .ackAck()
        .catch((error: unknown) =>
          log?.warn(
            { err: error, event_id: event.event_id, durable: options.durable },
            'ack not confirmed; the event may be redelivered (deduped)',
          ),
        );
    };
    return this.serve(await consumer.consume({ max_messages: 64 }), {
      label: { durable: options.durable },
      ...(log ? { logger: log } : {}),
      handle,
      describe: (msg) => {
        const parsed = parseEvent(safeJson(msg));
        return parsed.ok ? { event_id: parsed.event.event_id, type: parsed.event.type } : {};
      },
    });
  }

  /** Runs a consumer's messages (events or work items) with a bounded stop; `close()` stops it too. */
  serve(messages: Parameters<typeof serve>[0], options: Parameters<typeof serve>[1]): RunningConsumer {
    const running = serve(messages, options);
    this.consumers.add(running);
    return {
      stop: async (graceMs) => {
        await running.stop(graceMs);
        this.consumers.delete(running);
      },
    };
  }

  async ping(): Promise<void> {
    await this.nc.flush();
  }

  async close(graceMs?: number): Promise<void> {
    await Promise.all([...this.consumers].map((consumer) => consumer.stop(graceMs)));
    this.consumers.clear();
    await this.nc.drain();
  }
}

function safeJson(msg: JsMsg): unknown {
  try {
    return msg.json();
  } catch {
    // not JSON: nothing to name the message by
    return undefined;
  }
}
