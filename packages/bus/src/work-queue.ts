import { context } from '@opentelemetry/api';
import { AckPolicy, DeliverPolicy, JetStreamApiError, RetentionPolicy, type JsMsg } from '@nats-io/jetstream';
import type { Logger } from '@cairn/logging';
import type { Bus, RunningConsumer } from './bus.js';
import { backoffMs, handBack } from './serve.js';
import { extractTraceContext, injectTraceHeaders, newHeaders } from './tracing.js';

const SECOND_NS = 1_000_000_000;

/** A work queue at its NATS_STREAM_MAX_BYTES: the item was not queued (nothing queued before was dropped). */
export class WorkQueueFullError extends Error {
  constructor(
    readonly stream: string,
    options?: ErrorOptions,
  ) {
    super(`work queue ${stream} is full (NATS_STREAM_MAX_BYTES)`, options);
    this.name = 'WorkQueueFullError';
  }
}

// JetStream's "maximum bytes exceeded" / "maximum messages exceeded" (a store failure of a stream discarding new).
const STORE_FULL = 10077;

export interface WorkHandlerContext {
  /** 1 on the first delivery. */
  attempt: number;
  maxAttempts: number;
}

/**
 * A durable work queue on its own JetStream stream (work-queue retention: a message is gone once acked).
 * A handler that throws gets the item redelivered with backoff, up to `maxAttempts`; a process that dies
 * mid-item leaves it unacked, so another worker picks it up after `ackWaitMs`.
 */
export class WorkQueue<T> {
  private constructor(
    private readonly bus: Bus,
    readonly stream: string,
    readonly subject: string,
  ) {}

  static async open<T>(bus: Bus, name: string): Promise<WorkQueue<T>> {
    const stream = `${bus.options.stream}_WORK_${name.toUpperCase()}`;
    // Outside the event stream's subject space (`<prefix>.>`): JetStream streams may not overlap.
    const subject = `work.${bus.options.subjectPrefix}.${name}`;
    await bus.ensureStreamOf('work', {
      name: stream,
      subjects: [subject],
      retention: RetentionPolicy.Workqueue,
      duplicate_window: 120 * SECOND_NS,
      max_age: 7 * 24 * 3600 * SECOND_NS,
    });
    return new WorkQueue<T>(bus, stream, subject);
  }

  /**
   * Queues an item; `id` dedupes a retried enqueue within two minutes. Throws when JetStream does not store it: a
   * full queue (NATS_STREAM_MAX_BYTES, discard new) refuses new items rather than dropping queued ones.
   */
  async enqueue(item: T, id: string): Promise<void> {
    try {
      await this.bus.js.publish(this.subject, JSON.stringify(item), {
        msgID: id,
        headers: injectTraceHeaders(newHeaders()),
      });
    } catch (error) {
      if (
        error instanceof JetStreamApiError &&
        (error.code === STORE_FULL || /maximum (bytes|messages)/.test(error.message))
      )
        throw new WorkQueueFullError(this.stream, { cause: error });
      throw error;
    }
  }

  async consume(options: {
    durable: string;
    handler: (item: T, ctx: WorkHandlerContext) => Promise<void>;
    maxAttempts?: number;
    ackWaitMs?: number;
    logger?: Logger;
  }): Promise<RunningConsumer> {
    const maxAttempts = options.maxAttempts ?? 5;
    const ackWaitMs = options.ackWaitMs ?? 60_000;
    const config = {
      durable_name: options.durable,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      ack_wait: ackWaitMs * 1_000_000,
      max_deliver: maxAttempts,
      filter_subject: this.subject,
    };
    try {
      await this.bus.jsm.consumers.info(this.stream, options.durable);
      await this.bus.jsm.consumers.update(this.stream, options.durable, config);
    } catch {
      await this.bus.jsm.consumers.add(this.stream, config);
    }
    const consumer = await this.bus.js.consumers.get(this.stream, options.durable);
    const label = { durable: options.durable, stream: this.stream };
    const handle = async (msg: JsMsg, abandoned: AbortSignal): Promise<void> => {
      const attempt = msg.info.deliveryCount;
      // Long items keep their lease while they run, and only while they are still this worker's: an item a
      // stopping worker abandoned goes back to the queue when its lease runs out.
      const heartbeat = setInterval(
        () => {
          try {
            msg.working();
          } catch {
            // connection closed: the lease ends, the item comes back
          }
        },
        Math.max(1000, ackWaitMs / 3),
      );
      heartbeat.unref();
      const endLease = () => clearInterval(heartbeat);
      abandoned.addEventListener('abort', endLease, { once: true });
      try {
        const item = msg.json<T>();
        await context.with(extractTraceContext(msg.headers), () => options.handler(item, { attempt, maxAttempts }));
        // Confirmed, so a stopped worker has really released what it finished (an unconfirmed ack can be lost
        // with the connection; the item then comes back, which handlers tolerate, but never silently late).
        await msg
          .ackAck()
          .catch((error: unknown) =>
            options.logger?.warn({ err: error, stream: this.stream }, 'ack not confirmed; the item may be redelivered'),
          );
      } catch (error) {
        if (abandoned.aborted) {
          // Handed back by its stop already; failing now (its service fenced off) is expected.
          options.logger?.debug({ err: error, stream: this.stream }, 'abandoned work item ended');
          return;
        }
        options.logger?.warn({ err: error, attempt, stream: this.stream }, 'work item failed; will retry');
        handBack(msg, { label, ...(options.logger ? { logger: options.logger } : {}) }, backoffMs(500, 6, attempt));
      } finally {
        endLease();
        abandoned.removeEventListener('abort', endLease);
      }
    };
    return this.bus.serve(await consumer.consume({ max_messages: 1 }), {
      label,
      ...(options.logger ? { logger: options.logger } : {}),
      handle,
    });
  }
}
