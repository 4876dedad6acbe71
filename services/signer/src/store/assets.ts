import { randomUUID } from 'node:crypto';
import { and, desc, eq, isNull, lt, or, sql } from 'drizzle-orm';
import { rowOrNull, withRlsSettings, withTenant, type Database, type Tx } from '@cairn/db';
import type { AssetClaim, AssetRecords, AssetRow, ManifestRow } from '../app/ports.js';
import { assets, manifests, signClaims } from '../db/assets-schema.js';

/** Assets and manifests of the signer; every query under row-level security. */
export class AssetStore implements AssetRecords {
  constructor(private readonly db: Database) {}

  /**
   * Claims `assetId` for one sign, in one short transaction (no connection is held while the sign runs). Already
   * recorded: the recorded asset. Claimed by a live attempt: busy. Lapsed (its signer died), or held under the
   * same `claimId` (a job's next attempt, after the signer running it died): taken over.
   */
  async claimAsset(
    tenantId: string,
    assetId: string,
    leaseSeconds: number,
    claimId: string = randomUUID(),
  ): Promise<AssetClaim> {
    const lease = sql`now() + make_interval(secs => ${leaseSeconds})`;
    return withTenant(this.db, tenantId, async (tx) => {
      // Presenting the id opens the asset and the claim of any tenant, so another tenant's id is refused, not reused.
      await tx.execute(sql`select set_config('cairn.asset_id', ${assetId}, true)`);
      const recorded = async (): Promise<AssetClaim | undefined> => {
        const [row] = await tx.select().from(assets).where(eq(assets.assetId, assetId));
        if (!row) return undefined;
        return row.tenantId === tenantId ? { kind: 'recorded', asset: row } : { kind: 'foreign' };
      };
      const before = await recorded();
      if (before) return before;
      const inserted = await tx
        .insert(signClaims)
        .values({ assetId, tenantId, claimId, leaseExpiresAt: lease })
        .onConflictDoNothing()
        .returning({ assetId: signClaims.assetId });
      if (inserted.length > 0) {
        // An attempt that recorded the asset (and dropped its claim) between the first look and the insert:
        // its commit is visible to this statement, so the claim is undone and the recorded asset answered.
        const after = await recorded();
        if (!after) return { kind: 'claimed', claimId };
        await tx.delete(signClaims).where(and(eq(signClaims.assetId, assetId), eq(signClaims.claimId, claimId)));
        return after;
      }
      const [held] = await tx
        .select({
          tenantId: signClaims.tenantId,
          claimId: signClaims.claimId,
          leaseSecondsLeft: sql<number>`greatest(0, extract(epoch from ${signClaims.leaseExpiresAt} - now()))::float8`,
        })
        .from(signClaims)
        .where(eq(signClaims.assetId, assetId));
      // Dropped between the insert and this read (recorded or failed): the caller may simply retry.
      if (!held) return (await recorded()) ?? { kind: 'busy', retryAfterSeconds: 1 };
      if (held.tenantId !== tenantId) return { kind: 'foreign' };
      if (held.leaseSecondsLeft > 0 && held.claimId !== claimId)
        return { kind: 'busy', retryAfterSeconds: Math.max(1, Math.min(2, Math.ceil(held.leaseSecondsLeft))) };
      const taken = await tx
        .update(signClaims)
        .set({ claimId, leaseExpiresAt: lease })
        .where(
          and(
            eq(signClaims.assetId, assetId),
            or(sql`${signClaims.leaseExpiresAt} <= now()`, eq(signClaims.claimId, claimId)),
          ),
        )
        .returning({ assetId: signClaims.assetId });
      return taken.length > 0 ? { kind: 'claimed', claimId } : { kind: 'busy', retryAfterSeconds: 2 };
    });
  }

  /** Drops the claim of a sign that did not record its asset, so a retry with the same id may run at once. */
  async releaseClaim(tenantId: string, assetId: string, claimId: string): Promise<void> {
    await withTenant(this.db, tenantId, (tx) =>
      tx.delete(signClaims).where(and(eq(signClaims.assetId, assetId), eq(signClaims.claimId, claimId))),
    );
  }

  /**
   * Records a signed asset and its manifest, in the caller's transaction, and drops the claim it was signed under
   * (the fence): false, and nothing written, when that claim lapsed and another attempt took it over.
   */
  async insertSigned(
    tx: Tx,
    asset: typeof assets.$inferInsert,
    manifest: typeof manifests.$inferInsert,
    claimId: string,
  ): Promise<boolean> {
    const dropped = await tx
      .delete(signClaims)
      .where(and(eq(signClaims.assetId, asset.assetId), eq(signClaims.claimId, claimId)))
      .returning({ assetId: signClaims.assetId });
    if (dropped.length === 0) return false;
    await tx.insert(assets).values(asset);
    await tx.insert(manifests).values(manifest);
    return true;
  }

  getForTenant(tenantId: string, assetId: string): Promise<AssetRow | null> {
    return withTenant(this.db, tenantId, (tx) =>
      rowOrNull(
        tx
          .select()
          .from(assets)
          .where(and(eq(assets.assetId, assetId), eq(assets.tenantId, tenantId))),
      ),
    );
  }

  /** One asset by id for the public verifier page (the caller exposes only public fields). */
  getPublic(assetId: string): Promise<AssetRow | null> {
    return withRlsSettings(this.db, { 'cairn.asset_id': assetId }, (tx) =>
      rowOrNull(tx.select().from(assets).where(eq(assets.assetId, assetId))),
    );
  }

  /** The newest asset whose signed file is exactly the bytes of this SHA-256 and is still kept. */
  findByContent(contentSha256: string): Promise<AssetRow | null> {
    return withRlsSettings(this.db, { 'cairn.content_sha256': contentSha256 }, (tx) =>
      rowOrNull(
        tx
          .select()
          .from(assets)
          .where(and(eq(assets.contentSha256, contentSha256), isNull(assets.deletedAt)))
          .orderBy(desc(assets.createdAt))
          .limit(1),
      ),
    );
  }

  getManifest(manifestId: string): Promise<ManifestRow | null> {
    return withRlsSettings(this.db, { 'cairn.manifest_id': manifestId }, (tx) =>
      rowOrNull(tx.select().from(manifests).where(eq(manifests.manifestId, manifestId))),
    );
  }

  /** The manifest whose active manifest has this C2PA label (a public lookup, like by id). */
  getManifestByLabel(label: string): Promise<ManifestRow | null> {
    return withRlsSettings(this.db, { 'cairn.manifest_label': label }, (tx) =>
      rowOrNull(tx.select().from(manifests).where(eq(manifests.label, label))),
    );
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
}
