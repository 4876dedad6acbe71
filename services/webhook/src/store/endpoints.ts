import { and, asc, desc, eq, inArray, isNull, sql } from 'drizzle-orm';
import type { PgUpdateSetSource } from 'drizzle-orm/pg-core';
import { withTenant, type Database, type Tx } from '@cairn/db';
import { attempts, deliveries, endpoints } from '../db/schema.js';
import type { AttemptRow, DeliveryRow, EndpointRecords, EndpointRow, NewEndpoint } from '../app/ports.js';

/** A tenant's endpoints and deliveries; every statement runs as that tenant (RLS). */
export class EndpointStore implements EndpointRecords {
  constructor(private readonly db: Database) {}

  inTenant<T>(tenantId: string, fn: (tx: Tx) => Promise<T>): Promise<T> {
    return withTenant(this.db, tenantId, fn);
  }

  async insert(tx: Tx, endpoint: NewEndpoint): Promise<EndpointRow> {
    const [row] = await tx.insert(endpoints).values(endpoint).returning();
    return row!;
  }

  async listLive(tenantId: string, limit: number): Promise<EndpointRow[]> {
    return withTenant(this.db, tenantId, (tx) =>
      tx
        .select()
        .from(endpoints)
        .where(and(eq(endpoints.tenantId, tenantId), isNull(endpoints.deletedAt)))
        .orderBy(asc(endpoints.createdAt))
        .limit(limit),
    );
  }

  async liveEndpoint(tx: Tx, tenantId: string, webhookId: string): Promise<EndpointRow | undefined> {
    const [row] = await tx
      .select()
      .from(endpoints)
      .where(and(eq(endpoints.tenantId, tenantId), eq(endpoints.webhookId, webhookId), isNull(endpoints.deletedAt)));
    return row;
  }

  markDeleted(tx: Tx, webhookId: string): Promise<EndpointRow> {
    return this.updateEndpoint(tx, webhookId, { deletedAt: sql`now()` });
  }

  /** The new secret, and the one it replaces while it keeps signing (none: null, null). */
  setSealedSecret(
    tx: Tx,
    webhookId: string,
    sealedSecret: string,
    previous: { sealedSecret: string; expiresAt: Date } | null,
  ): Promise<EndpointRow> {
    return this.updateEndpoint(tx, webhookId, {
      sealedSecret,
      previousSealedSecret: previous?.sealedSecret ?? null,
      previousSecretExpiresAt: previous?.expiresAt ?? null,
    });
  }

  /** Sets `values` on one endpoint; its row as it is then. */
  private async updateEndpoint(
    tx: Tx,
    webhookId: string,
    values: PgUpdateSetSource<typeof endpoints>,
  ): Promise<EndpointRow> {
    const [updated] = await tx.update(endpoints).set(values).where(eq(endpoints.webhookId, webhookId)).returning();
    return updated!;
  }

  /** An endpoint's latest deliveries, newest first, with the attempts of each. */
  async recentDeliveries(
    tx: Tx,
    tenantId: string,
    webhookId: string,
    limit: number,
  ): Promise<{ rows: DeliveryRow[]; log: AttemptRow[] }> {
    const rows = await tx
      .select()
      .from(deliveries)
      .where(and(eq(deliveries.tenantId, tenantId), eq(deliveries.webhookId, webhookId)))
      .orderBy(desc(deliveries.createdAt), desc(deliveries.deliveryId))
      .limit(limit);
    const log =
      rows.length > 0
        ? await tx
            .select()
            .from(attempts)
            .where(
              inArray(
                attempts.deliveryId,
                rows.map((r) => r.deliveryId),
              ),
            )
        : [];
    return { rows, log };
  }

  async delivery(tx: Tx, tenantId: string, webhookId: string, deliveryId: string): Promise<DeliveryRow | undefined> {
    const [row] = await tx
      .select()
      .from(deliveries)
      .where(
        and(
          eq(deliveries.tenantId, tenantId),
          eq(deliveries.webhookId, webhookId),
          eq(deliveries.deliveryId, deliveryId),
        ),
      );
    return row;
  }

  /** A fresh cycle of attempts, due now. */
  async restartDelivery(tx: Tx, deliveryId: string): Promise<DeliveryRow> {
    const [updated] = await tx
      .update(deliveries)
      .set({ status: 'pending', attempts: 0, nextAttemptAt: sql`now()` })
      .where(eq(deliveries.deliveryId, deliveryId))
      .returning();
    return updated!;
  }

  async attemptsOf(tx: Tx, deliveryId: string): Promise<AttemptRow[]> {
    return tx.select().from(attempts).where(eq(attempts.deliveryId, deliveryId));
  }
}
