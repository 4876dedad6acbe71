import { and, eq, isNull, sql } from 'drizzle-orm';
import { withTenant, type Database } from '@cairn/db';
import { CairnError } from '@cairn/errors';
import type { MarkRecord, MarkRecords, NewMark } from '../app/ports.js';
import { marks } from '../db/schema.js';

/** The payload → watermark id registry (watermark.marks), always under row-level security. */
export class MarkRegistry implements MarkRecords {
  constructor(private readonly db: Database) {}

  /**
   * Records a mark as its tenant. Idempotent on the watermark id: recording the same mark again returns the
   * row already there. The same id for another asset or tenant, or a payload already taken by another id (a
   * 64-bit collision), is refused.
   */
  async record(mark: NewMark): Promise<MarkRecord> {
    return (await this.recordFor(mark.tenantId, mark.watermarkId, () => ({ mark, plan: undefined }))).row;
  }

  /**
   * `record` of the mark `choose` picks knowing the row already kept for the id (a retry must write what its id
   * was recorded with), read and recorded in one transaction: one round trip to the database less per embedding
   * than findById then record. Answers the recorded row and what `choose` planned with it.
   */
  async recordFor<T>(
    tenantId: string,
    watermarkId: string,
    choose: (existing: MarkRecord | null) => { mark: NewMark; plan: T },
  ): Promise<{ row: MarkRecord; plan: T }> {
    return withTenant(this.db, tenantId, async (tx) => {
      const [existing] = await tx.select().from(marks).where(eq(marks.watermarkId, watermarkId)).limit(1);
      const { mark, plan } = choose(existing ?? null);
      if (mark.tenantId !== tenantId || mark.watermarkId !== watermarkId)
        throw new Error('recordFor: the chosen mark must keep the tenant and watermark id it was asked for');
      let row = existing;
      if (!row) {
        // No conflict target: a clash on the id or on the payload both leave the table as it was (and return
        // nothing; the row that is there, if this tenant may see it, is read to say which).
        [row] = await tx.insert(marks).values(mark).onConflictDoNothing().returning();
        if (!row) [row] = await tx.select().from(marks).where(eq(marks.watermarkId, mark.watermarkId));
      }
      if (
        !row ||
        row.assetId !== mark.assetId ||
        row.payloadHex !== mark.payloadHex ||
        row.algorithm !== mark.algorithm ||
        row.keyId !== mark.keyId
      ) {
        throw new CairnError(
          'cairn.sign.idempotency_conflict',
          `watermark_id ${mark.watermarkId} is already registered for a different mark; use a new watermark id`,
        );
      }
      return { row, plan };
    });
  }

  /**
   * Keeps what a mark was embedded in. The first description stays: a retry of the id marks the same upload,
   * and a later call cannot swap the content an issued mark is checked against.
   */
  async describe(tenantId: string, watermarkId: string, content: Uint8Array): Promise<void> {
    await withTenant(this.db, tenantId, (tx) =>
      tx
        .update(marks)
        .set({ content: Buffer.from(content) })
        .where(and(eq(marks.watermarkId, watermarkId), isNull(marks.content))),
    );
  }

  /** The tenant's mark with this watermark id, if it has one (another tenant's is invisible). */
  async findById(tenantId: string, watermarkId: string): Promise<MarkRecord | null> {
    return withTenant(this.db, tenantId, async (tx) => {
      const [row] = await tx.select().from(marks).where(eq(marks.watermarkId, watermarkId)).limit(1);
      return row ?? null;
    });
  }

  /**
   * The mark carrying `payloadHex`, whoever's it is (public verification). The payload setting opens that
   * one row and nothing else: `withRlsSettings` knows only the fleet's common settings, so it is set here.
   * One statement, outside a transaction (one round trip, not BEGIN, set, select, COMMIT): the setting is
   * transaction-local, so it ends with the statement's own transaction; the mark is a LATERAL join on the
   * setting's value, so the row is read only after the setting is made.
   */
  async findByPayload(payloadHex: string): Promise<MarkRecord | null> {
    const presented = sql`(select set_config('cairn.watermark_payload', ${payloadHex}, true) as payload_hex) as presented`;
    const mark = this.db
      .select()
      .from(marks)
      .where(eq(marks.payloadHex, sql`presented.payload_hex`))
      .limit(1)
      .as('mark');
    const [row] = await this.db
      .select({
        watermarkId: mark.watermarkId,
        payloadHex: mark.payloadHex,
        tenantId: mark.tenantId,
        assetId: mark.assetId,
        algorithm: mark.algorithm,
        keyId: mark.keyId,
        content: mark.content,
        createdAt: mark.createdAt,
      })
      .from(presented)
      .crossJoinLateral(mark);
    return row ?? null;
  }
}
