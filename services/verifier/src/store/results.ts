import { eq } from 'drizzle-orm';
import type { Database } from '@cairn/db';
import { results } from '../db/schema.js';
import type { KeptVerdict, StoredReport, StoredResult, VerdictRecords } from '../app/ports.js';

/** The stored verdict of each Cairn manifest (see the `results` table for what may write one). */
export class ResultStore implements VerdictRecords {
  constructor(private readonly db: Database) {}

  async save(
    result: StoredResult,
    kept: { expiresAt: Date; trustDigest: string; anchorSettled: boolean; report?: StoredReport },
  ): Promise<void> {
    const row = {
      result,
      report: kept.report ?? null,
      verifiedAt: new Date(result.verified_at),
      expiresAt: kept.expiresAt,
      trustDigest: kept.trustDigest,
      anchorSettled: kept.anchorSettled,
      stale: false,
    };
    await this.db
      .insert(results)
      .values({ manifestId: result.manifest_id, assetId: result.asset_id, ...row })
      .onConflictDoUpdate({ target: results.manifestId, set: row });
  }

  async get(manifestId: string): Promise<KeptVerdict | null> {
    const [row] = await this.db.select().from(results).where(eq(results.manifestId, manifestId));
    if (!row) return null;
    return {
      result: row.result as StoredResult,
      computedAt: row.verifiedAt,
      expiresAt: row.expiresAt,
      trustDigest: row.trustDigest,
      stale: row.stale,
      ...(row.report ? { report: row.report as StoredReport } : {}),
    };
  }

  /** Marks verdicts for recomputation: all of them (a signing certificate was revoked), or those waiting for an anchor. */
  async markStale(which: 'all' | 'anchor_pending'): Promise<void> {
    await this.db
      .update(results)
      .set({ stale: true })
      .where(which === 'all' ? undefined : eq(results.anchorSettled, false));
  }
}
