import { newEvent } from '@cairn/events';
import type { Logger } from '@cairn/logging';
import { Backoff, type Outbox } from '@cairn/runtime';
import type { Sealer } from '@cairn/sealing';
import { renderBody, retryDelayMs, signatureHeader } from '../domain/events.js';
import type { ClaimedDelivery as Claimed, DeliveryQueue, DeliveryRow, SendOutcome, WebhookSender } from './ports.js';

/** What the log says of an attempt whose process stopped before recording it (its request may have arrived). */
export const LOST_ATTEMPT = 'no outcome recorded: the process making this attempt stopped';

export interface DispatcherOptions {
  retryScale: number;
  timeoutMs: number;
  maxInFlight: number;
  /** Shortest wait between two looks (a delivery due but held by a busy endpoint, a wake-up's safety look). */
  pollIntervalMs: number;
  /** Longest wait with nothing scheduled (doubling from pollIntervalMs): the look for rows of a replica that died. */
  idleMaxMs: number;
  userAgent: string;
}

/**
 * The delivery engine. Due deliveries live in Postgres (status + next_attempt_at), so the schedule survives
 * restarts. A claim marks a row `delivering` with a lease (next_attempt_at = now + timeout + margin): a process
 * that dies mid-attempt leaves a row that becomes due again when the lease runs out (at-least-once); that attempt
 * counts, is logged as lost, and the resend carries the next Cairn-Attempt number. Each
 * endpoint has at most one delivery in flight (here, and across replicas through the live-lease check), and
 * at most `maxInFlight` are in flight in all, so a slow or dead receiver holds one slot, never the others.
 *
 * The claim loop runs when woken (a fan-out, an endpoint test, an attempt finished) and otherwise sleeps until the
 * earliest scheduled attempt (a retry, a lease running out), at least `pollIntervalMs` and at most `idleMaxMs`;
 * with nothing scheduled it backs off to `idleMaxMs`. A wake-up always gets a second look `pollIntervalMs` later:
 * the fan-out wakes it just after its commit, and a look that came first finds nothing.
 */
export class Dispatcher {
  private readonly inFlight = new Map<string, AbortController>();
  private readonly busyEndpoints = new Set<string>();
  private readonly running = new Set<Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private loop: Promise<void> | undefined;
  private again = false;
  /** wake() was called since the current loop began. */
  private woken = false;
  private stopped = false;
  private readonly idle: Backoff;

  constructor(
    private readonly queue: DeliveryQueue,
    private readonly outbox: Outbox,
    private readonly sealer: Sealer,
    private readonly sender: WebhookSender,
    private readonly logger: Logger,
    private readonly options: DispatcherOptions,
  ) {
    this.idle = new Backoff(options.pollIntervalMs, Math.max(options.pollIntervalMs, options.idleMaxMs));
  }

  start(): void {
    this.wake();
  }

  /** Claims and starts due deliveries until none is due or every slot is taken. Never throws. */
  wake(): void {
    this.woken = true;
    this.run();
  }

  private run(): void {
    if (this.stopped) return;
    if (this.loop) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.loop = this.claimAll().then((waitMs) => {
      this.loop = undefined;
      if (this.stopped) return;
      // Woken since the loop began: look again soon (that wake-up's rows may commit just after it); woken after
      // its last claim: look now.
      let wait = this.woken ? Math.min(waitMs, this.options.pollIntervalMs) : waitMs;
      if (this.again) wait = 0;
      this.woken = false;
      this.timer = setTimeout(() => this.run(), wait);
      this.timer.unref();
    });
  }

  /** One claim loop; answers how long to sleep after it. */
  private async claimAll(): Promise<number> {
    const { pollIntervalMs, idleMaxMs, maxInFlight } = this.options;
    let claimed = 0;
    try {
      do {
        this.again = false;
        while (!this.stopped && this.inFlight.size < maxInFlight) {
          const n = await this.claimBatch();
          if (n === 0) break;
          claimed += n;
        }
      } while (this.again && !this.stopped);
      const dueInMs = await this.queue.nextDueInMs();
      if (dueInMs === null) return this.idle.next(claimed > 0);
      this.idle.reset();
      return Math.min(idleMaxMs, Math.max(pollIntervalMs, dueInMs));
    } catch (error) {
      this.logger.warn({ err: error }, 'webhook claim failed; will retry');
      return pollIntervalMs;
    }
  }

  /** Stops claiming, cuts in-flight attempts short and hands their rows back (they do not count as attempts). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.loop;
    for (const controller of this.inFlight.values()) controller.abort();
    await Promise.allSettled([...this.running]);
    this.sender.close();
  }

  get inFlightCount(): number {
    return this.inFlight.size;
  }

  private async claimBatch(): Promise<number> {
    const free = this.options.maxInFlight - this.inFlight.size;
    if (free <= 0) return 0;
    const busy = [...this.busyEndpoints];
    const lease = this.options.timeoutMs + 30_000;
    const claimed = await this.queue.claimDue(free, busy, lease);
    for (const c of claimed) this.launch(c);
    return claimed.length;
  }

  private launch(c: Claimed): void {
    const controller = new AbortController();
    const { deliveryId, webhookId } = c.delivery;
    this.inFlight.set(deliveryId, controller);
    this.busyEndpoints.add(webhookId);
    const run: Promise<void> = this.attempt(c, controller.signal)
      .catch((error: unknown) =>
        this.logger.error(
          { err: error, delivery_id: deliveryId },
          'webhook attempt could not be recorded; the lease will expire and it runs again',
        ),
      )
      .finally(() => {
        this.inFlight.delete(deliveryId);
        this.busyEndpoints.delete(webhookId);
        this.running.delete(run);
        this.wake();
      });
    this.running.add(run);
  }

  private async attempt({ delivery, endpoint, lostAttempt }: Claimed, signal: AbortSignal): Promise<void> {
    if (!endpoint || endpoint.deletedAt) {
      await this.finish(
        delivery,
        new Date(),
        { body: '', error: 'endpoint deleted', latencyMs: 0 },
        { final: true, silent: true, lostAttempt },
      );
      return;
    }
    const secrets = [this.sealer.open(endpoint.sealedSecret, endpoint.webhookId)];
    // A rotation's overlap: the replaced secret signs too, so a receiver not yet switched still accepts this.
    if (
      endpoint.previousSealedSecret &&
      endpoint.previousSecretExpiresAt &&
      endpoint.previousSecretExpiresAt > new Date()
    )
      secrets.push(this.sealer.open(endpoint.previousSealedSecret, endpoint.webhookId));
    const body = renderBody(delivery.payload);
    const signature = signatureHeader(body, secrets);
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'user-agent': this.options.userAgent,
      'cairn-event-id': delivery.eventId,
      'cairn-event-type': delivery.eventType,
      'cairn-delivery-id': delivery.deliveryId,
      'cairn-attempt': String(delivery.attempts + 1),
      'cairn-signature': signature,
      'x-cairn-signature': signature,
    };
    const startedAt = new Date();
    const outcome = await this.sender.send(endpoint.url, body, headers, signal);
    if (outcome.aborted) {
      await this.queue.handBack(delivery.deliveryId);
      return;
    }
    await this.finish(delivery, startedAt, outcome, { final: false, silent: false, url: endpoint.url, lostAttempt });
  }

  /** Records the attempt and moves the delivery on: delivered, scheduled again, or failed (webhook.failed). */
  private async finish(
    delivery: DeliveryRow,
    startedAt: Date,
    outcome: SendOutcome,
    how: { final: boolean; silent: boolean; url?: string; lostAttempt?: Claimed['lostAttempt'] },
  ): Promise<void> {
    const ok = outcome.statusCode !== undefined && outcome.statusCode >= 200 && outcome.statusCode < 300;
    const n = delivery.attempts + 1;
    // What the tenant reads (last_error, webhook.failed): a status or a class of failure, never the answer's body,
    // which is kept with the attempt only.
    const error = ok ? null : (outcome.error ?? `HTTP ${outcome.statusCode ?? 0}`);
    const delay = how.final ? undefined : retryDelayMs(n, this.options.retryScale);
    let emitted = false;
    await this.queue.inTenantTx(delivery.tenantId, async (tx) => {
      if (how.lostAttempt) {
        await this.queue.insertAttempt(tx, delivery, {
          startedAt: how.lostAttempt.startedAt,
          statusCode: null,
          latencyMs: 0,
          error: LOST_ATTEMPT,
          responseBody: null,
        });
      }
      if (!how.silent) {
        await this.queue.insertAttempt(tx, delivery, {
          startedAt,
          statusCode: outcome.statusCode ?? null,
          latencyMs: outcome.latencyMs,
          error,
          responseBody: outcome.body || null,
        });
      }
      const last = {
        attempts: n,
        lastStatusCode: outcome.statusCode ?? null,
        lastError: error,
        lastLatencyMs: outcome.latencyMs,
      };
      if (ok) {
        await this.queue.markDelivered(tx, delivery, last);
      } else if (delay !== undefined) {
        await this.queue.scheduleRetry(tx, delivery, last, delay);
      } else {
        const moved = await this.queue.markFailed(tx, delivery, last);
        if (moved && !how.silent) {
          await this.outbox.enqueue(
            tx,
            newEvent('webhook.failed', delivery.tenantId, {
              webhook_id: delivery.webhookId,
              delivery_id: delivery.deliveryId,
              event_id: delivery.eventId,
              event_type: delivery.eventType,
              url: how.url ?? null,
              attempts: n,
              last_status_code: outcome.statusCode ?? null,
              last_error: error,
            }),
          );
          emitted = true;
        }
      }
    });
    if (emitted) void this.outbox.flush();
  }
}
