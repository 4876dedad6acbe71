import { and, desc, eq, isNull, lt, sql } from 'drizzle-orm';
import { withRlsSettings, withTenant, type Database, type Tx } from '@cairn/db';
import { assets, jobs, manifests } from '../db/assets-schema.js';

export type AssetRow = typeof assets.$inferSelect;
export type ManifestRow = typeof manifests.$inferSelect;
export type JobRow = typeof jobs.$inferSelect;

/** Assets, manifests and jobs of the signer; every query under row-level security. */
export class AssetStore {
  constructor(private readonly db: Database) {}

  async insertSigned(
    tx: Tx,
    asset: typeof assets.$inferInsert,
    manifest: typeof manifests.$inferInsert,
  ): Promise<void> {
    await tx.insert(assets).values(asset);
    await tx.insert(manifests).values(manifest);
  }

  getForTenant(tenantId: string, assetId: string): Promise<AssetRow | null> {
    return withTenant(
      this.db,
      tenantId,
      async (tx) =>
        (
          await tx
            .select()
            .from(assets)
            .where(and(eq(assets.assetId, assetId), eq(assets.tenantId, tenantId)))
        )[0] ?? null,
    );
  }

  /** One asset by id for the public verifier page (the caller exposes only public fields). */
  async getPublic(assetId: string): Promise<AssetRow | null> {
    return withRlsSettings(this.db, {}, async (tx) => {
      await tx.execute(sql`select set_config('cairn.asset_id', ${assetId}, true)`);
      return (await tx.select().from(assets).where(eq(assets.assetId, assetId)))[0] ?? null;
    });
  }

  /** The newest asset whose signed file is exactly the bytes of this SHA-256 and is still kept. */
  async findByContent(contentSha256: string): Promise<AssetRow | null> {
    return withRlsSettings(this.db, {}, async (tx) => {
      await tx.execute(sql`select set_config('cairn.content_sha256', ${contentSha256}, true)`);
      const rows = await tx
        .select()
        .from(assets)
        .where(and(eq(assets.contentSha256, contentSha256), isNull(assets.deletedAt)))
        .orderBy(desc(assets.createdAt))
        .limit(1);
      return rows[0] ?? null;
    });
  }

  async getManifest(manifestId: string): Promise<ManifestRow | null> {
    return withRlsSettings(this.db, {}, async (tx) => {
      await tx.execute(sql`select set_config('cairn.manifest_id', ${manifestId}, true)`);
      return (await tx.select().from(manifests).where(eq(manifests.manifestId, manifestId)))[0] ?? null;
    });
  }

  /** The manifest whose active manifest has this C2PA label (a public lookup, like by id). */
  async getManifestByLabel(label: string): Promise<ManifestRow | null> {
    return withRlsSettings(this.db, {}, async (tx) => {
      await tx.execute(sql`select set_config('cairn.manifest_label', ${label}, true)`);
      return (await tx.select().from(manifests).where(eq(manifests.label, label)))[0] ?? null;
    });
  }

  /** Assets past their retention that still hold a file: the expiry sweep's work list. */
  async claimExpired(limit: number, remove: (row: AssetRow) => Promise<void>): Promise<number> {
    return this.db.transaction(async (tx) => {
      await tx.execute(sql`select set_config('cairn.system', 'asset-expiry', true)`);
      const due = await tx
        .select()
        .from(assets)
        .where(and(lt(assets.expiresAt, new Date()), isNull(assets.deletedAt)))
        .limit(limit)
        .for('update', { skipLocked: true });
      for (const row of due) {
        await remove(row);
        await tx.update(assets).set({ deletedAt: new Date(), blobKey: null }).where(eq(assets.assetId, row.assetId));
      }
      return due.length;
    });
  }

  async createJob(tenantId: string, jobId: string, request: unknown): Promise<JobRow> {
    return withTenant(this.db, tenantId, async (tx) => {
      const [row] = await tx.insert(jobs).values({ jobId, tenantId, status: 'queued', request }).returning();
      if (!row) throw new Error('job insert returned nothing');
      return row;
    });
  }

  getJob(tenantId: string, jobId: string): Promise<JobRow | null> {
    return withTenant(
      this.db,
      tenantId,
      async (tx) =>
        (
          await tx
            .select()
            .from(jobs)
            .where(and(eq(jobs.jobId, jobId), eq(jobs.tenantId, tenantId)))
        )[0] ?? null,
    );
  }

  async markJob(
    tx: Tx,
    jobId: string,
    fields: Partial<Pick<JobRow, 'status' | 'result' | 'problem' | 'attempts'>>,
  ): Promise<void> {
    await tx
      .update(jobs)
      .set({ ...fields, updatedAt: new Date() })
      .where(eq(jobs.jobId, jobId));
  }
}
