import { newEvent } from '@cairn/events';
import type { Database } from '@cairn/db';
import type { Logger } from '@cairn/logging';
import type { Outbox } from '@cairn/runtime';
import type { Sealer } from '@cairn/sealing';
import type { Sender, SendOutcome } from '../adapters/sender.js';
import { renderBody, retryDelayMs, signatureHeader } from '../domain/events.js';
import {
  claimDue,
  handBack,
  inTenantTx,
  insertAttempt,
  markDelivered,
  markFailed,
  scheduleRetry,
  type ClaimedDelivery as Claimed,
  type DeliveryRow,
} from '../store/deliveries.js';

export interface DispatcherOptions {
  retryScale: number;
  timeoutMs: number;
  maxInFlight: number;
  pollIntervalMs: number;
  userAgent: string;
}

/**
 * The delivery engine. Due deliveries live in Postgres (status + next_attempt_at), so the schedule survives
 * restarts. A claim marks a row `delivering` with a lease (next_attempt_at = now + timeout + margin): a process
 * that dies mid-attempt leaves a row that becomes due again when the lease runs out (at-least-once). Each
 * endpoint has at most one delivery in flight (here, and across replicas through the live-lease check), and
 * at most `maxInFlight` are in flight in all, so a slow or dead receiver holds one slot, never the others.
 */
export class Dispatcher {
  private readonly inFlight = new Map<string, AbortController>();
  private readonly busyEndpoints = new Set<string>();
  private readonly running = new Set<Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private loop: Promise<void> | undefined;
  private again = false;
  private stopped = false;

  constructor(
    private readonly db: Database,
    private readonly outbox: Outbox,
    private readonly sealer: Sealer,
    private readonly sender: Sender,
    private readonly logger: Logger,
    private readonly options: DispatcherOptions,
  ) {}

  start(): void {
    this.timer = setInterval(() => this.wake(), this.options.pollIntervalMs);
    this.timer.unref();
    this.wake();
  }

  /** Claims and starts due deliveries until none is due or every slot is taken. Never throws. */
  wake(): void {
    if (this.stopped) return;
    if (this.loop) {
      this.again = true;
      return;
    }
    this.loop = (async () => {
      do {
        this.again = false;
        try {
          while (!this.stopped && this.inFlight.size < this.options.maxInFlight && (await this.claimBatch()) > 0);
        } catch (error) {
          this.logger.warn({ err: error }, 'webhook claim failed; will retry');
        }
      } while (this.again && !this.stopped);
    })().finally(() => {
      this.loop = undefined;
    });
  }

  /** Stops claiming, cuts in-flight attempts short and hands their rows back (they do not count as attempts). */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
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
    const claimed = await claimDue(this.db, free, busy, lease);
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

  private async attempt({ delivery, endpoint }: Claimed, signal: AbortSignal): Promise<void> {
    if (!endpoint || endpoint.deletedAt) {
      await this.finish(
        delivery,
        new Date(),
        { body: '', error: 'endpoint deleted', latencyMs: 0 },
        { final: true, silent: true },
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
      await handBack(this.db, delivery.deliveryId);
      return;
    }
    await this.finish(delivery, startedAt, outcome, { final: false, silent: false, url: endpoint.url });
  }

  /** Records the attempt and moves the delivery on: delivered, scheduled again, or failed (webhook.failed). */
  private async finish(
    delivery: DeliveryRow,
    startedAt: Date,
    outcome: SendOutcome,
    how: { final: boolean; silent: boolean; url?: string },
  ): Promise<void> {
    const ok = outcome.statusCode !== undefined && outcome.statusCode >= 200 && outcome.statusCode < 300;
    const n = delivery.attempts + 1;
    // What the tenant reads (last_error, webhook.failed): a status or a class of failure, never the answer's body,
    // which is kept with the attempt only.
    const error = ok ? null : (outcome.error ?? `HTTP ${outcome.statusCode ?? 0}`);
    const delay = how.final ? undefined : retryDelayMs(n, this.options.retryScale);
    let emitted = false;
    await inTenantTx(this.db, delivery.tenantId, async (tx) => {
      if (!how.silent) {
        await insertAttempt(tx, delivery, {
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
        await markDelivered(tx, delivery, last);
      } else if (delay !== undefined) {
        await scheduleRetry(tx, delivery, last, delay);
      } else {
        const moved = await markFailed(tx, delivery, last);
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
