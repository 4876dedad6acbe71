import { sql } from 'drizzle-orm';
import type { Bus } from '@cairn/bus';
import type { AnyEvent } from '@cairn/events';
import type { Database, Tx } from '@cairn/db';
import type { Logger } from '@cairn/logging';
import type { ServiceMetrics } from '@cairn/telemetry';
import { context, propagation } from '@opentelemetry/api';
import { Backoff, wakeableLoop, type WakeableLoop } from './backoff.js';

/** Rows one relay transaction takes; a batch this full may have left more behind. */
const RELAY_BATCH = 100;
/** Sent rows are kept a day for inspection; the relay drops the older ones at most this often, not per flush. */
const PRUNE_EVERY_MS = 60_000;

/** The relay's safety sweep: first `baseMs` after activity, doubling while it finds nothing, up to `maxMs`. */
export interface OutboxSweep {
  baseMs: number;
  maxMs: number;
}

/**
 * Transactional outbox: `enqueue` writes the event in the caller's transaction; the relay publishes committed
 * rows to JetStream (message id = event id, so a retried publish is stored once) and marks them sent.
 *
 * Callers `flush()` after their commit, so an event leaves at once. The sweep catches the rest: an enqueue whose
 * writer does not flush (it brings the sweep back to `baseMs`), one whose flush failed (NATS away), and rows
 * committed by a replica that crashed before its flush. An idle service backs off to `maxMs` between sweeps, one
 * short transaction each, instead of one a second.
 */
export class Outbox {
  private sweep: WakeableLoop | undefined;
  private sweepBaseMs = 0;
  /** Something was enqueued or relayed since the current sweep began: the next one comes after `baseMs`. */
  private active = false;
  private running: Promise<void> | undefined;
  private again = false;
  /** When the relay next drops sent rows older than a day (0: at its first transaction). */
  private pruneAt = 0;

  constructor(
    private readonly db: Database,
    private readonly schema: string,
    private readonly bus: Bus,
    private readonly logger: Logger,
    private readonly metrics: ServiceMetrics,
  ) {}

  async enqueue(tx: Tx | Database, event: AnyEvent): Promise<void> {
    const headers: Record<string, string> = {};
    propagation.inject(context.active(), headers);
    await tx.execute(
      sql`insert into ${sql.identifier(this.schema)}.outbox (event_id, subject, envelope, headers) values (${event.event_id}, ${this.bus.subject(event.type)}, ${JSON.stringify(event)}::jsonb, ${JSON.stringify(headers)}::jsonb)`,
    );
    // The row is not committed yet, so no flush here; the sweep comes soon in case the writer never flushes.
    this.active = true;
    this.sweep?.wake(this.sweepBaseMs);
  }

  /**
   * Writes an event that announces nothing else written (no change of the caller's commits with it) in a statement
   * of its own, one round trip instead of a transaction's, then relays it at once.
   */
  async enqueueAlone(event: AnyEvent): Promise<void> {
    await this.enqueue(this.db, event);
    void this.flush();
  }

  /** Publishes what is pending now; call after a commit that enqueued events. Never throws. */
  flush(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      do {
        this.again = false;
        try {
          // A batch that was not full took every row committed when it read them; rows committed since are their
          // writer's flush (which asks for another round here: `again`) or the sweep's, so no empty read follows.
          for (let relayed = RELAY_BATCH; relayed === RELAY_BATCH;) {
            relayed = await this.relayBatch();
            if (relayed > 0) this.active = true;
          }
        } catch (error) {
          this.active = true;
          this.logger.warn({ err: error }, 'outbox relay failed; will retry');
        }
      } while (this.again);
    })().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  /** Relays what is pending now, then sweeps on the back-off of `sweep`. */
  start(sweep: OutboxSweep = { baseMs: 1000, maxMs: 30_000 }): void {
    const backoff = new Backoff(Math.min(sweep.baseMs, sweep.maxMs), sweep.maxMs);
    this.sweepBaseMs = backoff.baseMs;
    this.sweep = wakeableLoop(
      async () => {
        this.active = false;
        await this.flush();
        return backoff.next(this.active);
      },
      // flush never throws; a failed relay is logged there and counts as activity to retry soon.
      () => undefined,
      backoff.baseMs,
    );
  }

  /** Events written but not yet on the bus (operators alert when this grows). */
  async pendingCount(): Promise<number> {
    const result = await this.db.execute<{ n: string }>(
      sql`select count(*)::text as n from ${sql.identifier(this.schema)}.outbox where published_at is null`,
    );
    return Number(result.rows[0]?.n ?? 0);
  }

  async stop(): Promise<void> {
    await this.sweep?.stop();
    await this.flush();
  }

  private async relayBatch(): Promise<number> {
    return this.db.transaction(async (tx) => {
      const rows = await tx.execute<{
        seq: number;
        event_id: string;
        subject: string;
        envelope: AnyEvent;
        headers: Record<string, string>;
      }>(
        sql`select seq, event_id, subject, envelope, headers from ${sql.identifier(this.schema)}.outbox where published_at is null order by seq limit ${RELAY_BATCH} for update skip locked`,
      );
      for (const row of rows.rows) {
        await this.bus.publishRaw(row.subject, JSON.stringify(row.envelope), row.event_id, {
          ...row.headers,
          'Cairn-Event-Type': row.envelope.type,
        });
        this.metrics.eventsPublished.inc({ type: row.envelope.type });
      }
      if (rows.rows.length > 0) {
        const seqs = rows.rows.map((r) => r.seq);
        await tx.execute(
          sql`update ${sql.identifier(this.schema)}.outbox set published_at = now() where seq in ${seqs}`,
        );
      }
      // Sent rows are kept a day for inspection, then dropped: a minute late at most, not a statement per flush.
      if (Date.now() >= this.pruneAt) {
        await tx.execute(
          sql`delete from ${sql.identifier(this.schema)}.outbox where published_at < now() - interval '1 day'`,
        );
        this.pruneAt = Date.now() + PRUNE_EVERY_MS;
      }
      return rows.rows.length;
    });
  }
}
