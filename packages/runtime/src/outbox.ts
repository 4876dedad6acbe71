import { sql } from 'drizzle-orm';
import type { Bus } from '@cairn/bus';
import type { AnyEvent } from '@cairn/events';
import type { Database, Tx } from '@cairn/db';
import type { Logger } from '@cairn/logging';
import type { ServiceMetrics } from '@cairn/telemetry';
import { context, propagation } from '@opentelemetry/api';

/**
 * Transactional outbox: `enqueue` writes the event in the caller's transaction; the relay publishes committed
 * rows to JetStream (message id = event id, so a retried publish is stored once) and marks them sent.
 */
export class Outbox {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;

  constructor(
    private readonly db: Database,
    private readonly schema: string,
    private readonly bus: Bus,
    private readonly logger: Logger,
    private readonly metrics: ServiceMetrics,
  ) {}

  async enqueue(tx: Tx, event: AnyEvent): Promise<void> {
    const headers: Record<string, string> = {};
    propagation.inject(context.active(), headers);
    await tx.execute(
      sql`insert into ${sql.identifier(this.schema)}.outbox (event_id, subject, envelope, headers) values (${event.event_id}, ${this.bus.subject(event.type)}, ${JSON.stringify(event)}::jsonb, ${JSON.stringify(headers)}::jsonb)`,
    );
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
          while ((await this.relayBatch()) > 0);
        } catch (error) {
          this.logger.warn({ err: error }, 'outbox relay failed; will retry');
        }
      } while (this.again);
    })().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  start(intervalMs = 1000): void {
    this.timer = setInterval(() => void this.flush(), intervalMs);
    this.timer.unref();
    void this.flush();
  }

  /** Events written but not yet on the bus (operators alert when this grows). */
  async pendingCount(): Promise<number> {
    const result = await this.db.execute<{ n: string }>(
      sql`select count(*)::text as n from ${sql.identifier(this.schema)}.outbox where published_at is null`,
    );
    return Number(result.rows[0]?.n ?? 0);
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
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
        sql`select seq, event_id, subject, envelope, headers from ${sql.identifier(this.schema)}.outbox where published_at is null order by seq limit 100 for update skip locked`,
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
      // Sent rows are kept a day for inspection, then dropped.
      await tx.execute(
        sql`delete from ${sql.identifier(this.schema)}.outbox where published_at < now() - interval '1 day'`,
      );
      return rows.rows.length;
    });
  }
}
