import { and, count, desc, eq, or, sql } from 'drizzle-orm';
import { withTenant, type Database, type Tx } from '@cairn/db';
import type { BindOutcome, NewStoredManifest, StoredManifest, StoredManifests } from '../app/ports.js';
import { storedBindings, storedManifests } from '../db/schema.js';

/**
 * All SQL of the resolution API's repository (stored manifests and their bindings). Writes run as the owning
 * tenant (RLS: a tenant can neither see nor touch another's rows); public reads set `cairn.softbinding_public`,
 * which opens rows for reading only.
 */
export class ManifestRepository implements StoredManifests {
  constructor(private readonly db: Database) {}

  private publicRead<T>(fn: (tx: Tx) => Promise<T>): Promise<T> {
    return this.db.transaction(async (tx) => {
      await tx.execute(sql`select set_config('cairn.softbinding_public', 'on', true)`);
      return fn(tx);
    });
  }

  /**
   * Inserts the manifest and binds its own values (a value the tenant already bound elsewhere stays there), unless
   * the tenant already keeps `maxPerTenant`. The tenant's inserts are serialised (a transaction-scoped advisory lock
   * on its id), so concurrent uploads cannot overshoot the count.
   */
  async insert(
    manifest: NewStoredManifest,
    bindings: ReadonlyArray<{ alg: string; value: string }>,
    maxPerTenant: number,
  ): Promise<number | 'quota_exceeded'> {
    return withTenant(this.db, manifest.tenantId, async (tx) => {
      await tx.execute(sql`select pg_advisory_xact_lock(hashtext(${`stored_manifests:${manifest.tenantId}`}))`);
      const [held] = await tx.select({ n: count() }).from(storedManifests);
      if ((held?.n ?? 0) >= maxPerTenant) return 'quota_exceeded';
      await tx.insert(storedManifests).values(manifest);
      if (bindings.length === 0) return 0;
      const rows = await tx
        .insert(storedBindings)
        .values(
          bindings.map((b) => ({
            tenantId: manifest.tenantId,
            alg: b.alg,
            value: b.value,
            manifestId: manifest.manifestId,
            source: 'manifest',
          })),
        )
        .onConflictDoNothing()
        .returning({ value: storedBindings.value });
      return rows.length;
    });
  }

  async get(manifestId: string): Promise<StoredManifest | undefined> {
    return this.publicRead(async (tx) => {
      const [row] = await tx
        .select({
          manifestId: storedManifests.manifestId,
          sha256: storedManifests.sha256,
          bytes: storedManifests.bytes,
          receipt: storedManifests.receipt,
        })
        .from(storedManifests)
        .where(eq(storedManifests.manifestId, manifestId));
      return row;
    });
  }

  /** Deletes the tenant's manifest (its bindings go with it); false when it is not the tenant's. */
  async delete(tenantId: string, manifestId: string): Promise<boolean> {
    return withTenant(this.db, tenantId, async (tx) => {
      const rows = await tx
        .delete(storedManifests)
        .where(eq(storedManifests.manifestId, manifestId))
        .returning({ id: storedManifests.manifestId });
      return rows.length > 0;
    });
  }

  /** Binds (or, with `replace`, moves the tenant's binding of) `value` to the tenant's manifest `manifestId`. */
  async bind(
    tenantId: string,
    binding: { manifestId: string; alg: string; value: string },
    replace: boolean,
  ): Promise<BindOutcome> {
    return withTenant(this.db, tenantId, async (tx) => {
      // Under RLS the select sees the tenant's manifests only: another tenant's id is "no manifest" (the foreign
      // key alone would accept it, since integrity checks do not apply policies).
      const [own] = await tx
        .select({ id: storedManifests.manifestId })
        .from(storedManifests)
        .where(eq(storedManifests.manifestId, binding.manifestId));
      if (!own) return 'no_manifest';
      const key = and(
        eq(storedBindings.tenantId, tenantId),
        eq(storedBindings.alg, binding.alg),
        eq(storedBindings.value, binding.value),
      );
      if (replace) {
        const moved = await tx
          .update(storedBindings)
          .set({ manifestId: binding.manifestId, source: 'api', createdAt: sql`now()` })
          .where(key)
          .returning({ value: storedBindings.value });
        return moved.length > 0 ? 'bound' : 'no_binding';
      }
      const inserted = await tx
        .insert(storedBindings)
        .values({ tenantId, ...binding, source: 'api' })
        .onConflictDoNothing()
        .returning({ value: storedBindings.value });
      if (inserted.length > 0) return 'bound';
      const [existing] = await tx.select({ id: storedBindings.manifestId }).from(storedBindings).where(key);
      return existing?.id === binding.manifestId ? 'bound' : 'bound_elsewhere';
    });
  }

  /** Manifests bound to `value` under `alg` or under no algorithm, newest binding first (every tenant's). */
  async find(alg: string, value: string, limit: number): Promise<string[]> {
    return this.publicRead(async (tx) => {
      const rows = await tx
        .select({ id: storedBindings.manifestId, at: storedBindings.createdAt })
        .from(storedBindings)
        .where(and(eq(storedBindings.value, value), or(eq(storedBindings.alg, alg), eq(storedBindings.alg, ''))))
        .orderBy(desc(storedBindings.createdAt))
        .limit(limit * 4);
      return [...new Set(rows.map((r) => r.id))].slice(0, limit);
    });
  }
}
