import { createHash } from 'node:crypto';
import { timestampDate, timestampFromDate, type Timestamp } from '@bufbuild/protobuf/wkt';
import { isCairnError } from '@cairn/errors';
import { tenantV1 } from '@cairn/proto';
import type { ClientOf } from '@cairn/rpc';
import type { Scope } from '@cairn/catalog';
import type { RecipeCatalogue, Tenant } from '../app/ports.js';

export type TenantClient = ClientOf<typeof tenantV1.TenantService>;

export type { Tenant } from '../app/ports.js';

export interface ApiKeyRecord {
  keyId: string;
  tenantId: string;
  scope: string;
  description: string | null;
  expiresAt: Date | null;
  revokedAt: Date | null;
  createdAt: Date;
}

export interface AuthenticatedKey {
  keyId: string;
  scope: Scope;
  tenant: Tenant;
}

export type KeyRefusal = 'malformed' | 'unknown' | 'revoked' | 'expired';

/** A spending cap to set: a number, null for none; undefined leaves it (or, for a new sub-tenant, the parent's). */
export type SpendingCapInput = number | null | undefined;

export interface AuthCacheOptions {
  /** How long a successful authentication is reused without asking the tenant service. */
  ttlMs: number;
  /** At most this many keys are remembered; the oldest goes first. */
  maxEntries: number;
}

interface CachedKey {
  key: AuthenticatedKey;
  /** Epoch ms past which the entry is not used: the TTL, or the key's own expiry if sooner. */
  until: number;
}

/** Recipes (per plan) remembered at most. */
const RECIPE_CACHE_MAX = 256;

const REFUSALS: Record<tenantV1.KeyRefusal, KeyRefusal> = {
  [tenantV1.KeyRefusal.UNSPECIFIED]: 'unknown',
  [tenantV1.KeyRefusal.MALFORMED]: 'malformed',
  [tenantV1.KeyRefusal.UNKNOWN]: 'unknown',
  [tenantV1.KeyRefusal.REVOKED]: 'revoked',
  [tenantV1.KeyRefusal.EXPIRED]: 'expired',
};

/**
 * The tenant service as the gateway's routes see it. Authentications are cached in this process for a short
 * TTL (bounded, keyed by the key's SHA-256, never the key): a key revoked or a setting changed through this
 * gateway drops the tenant's entries at once; through another replica, the change reaches this one within
 * the TTL (the documented bound). Refusals are never cached, so a new key works at once.
 */
export class TenantDirectory implements RecipeCatalogue {
  private readonly cache = new Map<string, CachedKey>();
  private readonly recipes = new Map<string, { recipe: tenantV1.Recipe; until: number }>();
  /** Bumped by forget(): a lookup that started before it is not cached. */
  private generation = 0;
  private readonly pending = new Map<string, Promise<AuthenticatedKey | { error: KeyRefusal }>>();

  constructor(
    private readonly client: TenantClient,
    private readonly options: AuthCacheOptions,
    private readonly now: () => number = Date.now,
  ) {}

  async authenticate(apiKey: string): Promise<AuthenticatedKey | { error: KeyRefusal }> {
    const cacheKey = createHash('sha256').update(apiKey, 'utf8').digest('hex');
    const cached = this.cache.get(cacheKey);
    if (cached && cached.until > this.now()) return cached.key;
    if (cached) this.cache.delete(cacheKey);
    // Concurrent requests with one key share one call (a burst costs the tenant service one lookup).
    const pending = this.pending.get(cacheKey);
    if (pending) return pending;
    const lookup = this.lookUp(apiKey, cacheKey).finally(() => this.pending.delete(cacheKey));
    this.pending.set(cacheKey, lookup);
    return lookup;
  }

  private async lookUp(apiKey: string, cacheKey: string): Promise<AuthenticatedKey | { error: KeyRefusal }> {
    const generation = this.generation;
    const { outcome } = await this.client.authenticate({ apiKey });
    if (outcome.case !== 'key') return { error: outcome.case === 'refusal' ? REFUSALS[outcome.value] : 'unknown' };
    const key: AuthenticatedKey = {
      keyId: outcome.value.keyId,
      scope: outcome.value.scope as Scope,
      tenant: tenantOf(outcome.value.tenant),
    };
    const expiresAt = outcome.value.expiresAt ? timestampDate(outcome.value.expiresAt).getTime() : Infinity;
    if (generation === this.generation)
      this.remember(cacheKey, { key, until: Math.min(this.now() + this.options.ttlMs, expiresAt) });
    return key;
  }

  /** Drops every cached authentication of these tenants (their keys or settings just changed). */
  forget(...tenantIds: string[]): void {
    // A lookup in flight may carry the state from before the change: it answers its callers, but is not kept.
    this.generation += 1;
    const ids = new Set(tenantIds);
    for (const [cacheKey, entry] of this.cache)
      if (
        ids.has(entry.key.tenant.tenantId) ||
        (entry.key.tenant.parentTenantId && ids.has(entry.key.tenant.parentTenantId))
      )
        this.cache.delete(cacheKey);
  }

  async managed(actorTenantId: string, tenantId: string): Promise<Tenant> {
    const { tenant } = await this.client.getManagedTenant({ actorTenantId, tenantId });
    return tenantOf(tenant);
  }

  async createSubTenant(
    actorTenantId: string,
    input: { name: string; email: string | null; plan: string; spendingCapUsd: SpendingCapInput },
    actorKeyId: string,
  ): Promise<Tenant> {
    const { tenant } = await this.client.createSubTenant({
      actorTenantId,
      actorKeyId,
      name: input.name,
      plan: input.plan,
      ...(input.email !== null ? { email: input.email } : {}),
      ...capField(input.spendingCapUsd),
    });
    return tenantOf(tenant);
  }

  async createKey(
    actorTenantId: string,
    tenantId: string,
    input: { scope: Scope; description: string | null; expiresAt: Date | null },
    actorKeyId: string,
  ): Promise<{ key: ApiKeyRecord; apiKey: string }> {
    const created = await this.client.createKey({
      actorTenantId,
      actorKeyId,
      tenantId,
      scope: input.scope,
      ...(input.description !== null ? { description: input.description } : {}),
      ...(input.expiresAt ? { expiresAt: timestampFromDate(input.expiresAt) } : {}),
    });
    return { key: keyOf(created.key), apiKey: created.apiKey };
  }

  async listKeys(actorTenantId: string, tenantId: string, limit: number): Promise<ApiKeyRecord[]> {
    const { keys } = await this.client.listKeys({ actorTenantId, tenantId, limit });
    return keys.map(keyOf);
  }

  async revokeKey(actorTenantId: string, tenantId: string, keyId: string, actorKeyId: string): Promise<ApiKeyRecord> {
    const { key } = await this.client.revokeKey({ actorTenantId, tenantId, keyId, actorKeyId });
    this.forget(tenantId);
    return keyOf(key);
  }

  async updateSettings(
    actorTenantId: string,
    tenantId: string,
    patch: { auditRetentionDays: number | undefined; spendingCapUsd: SpendingCapInput },
    actorKeyId: string,
  ): Promise<Tenant> {
    const { tenant } = await this.client.updateSettings({
      actorTenantId,
      actorKeyId,
      tenantId,
      ...(patch.auditRetentionDays !== undefined ? { auditRetentionDays: patch.auditRetentionDays } : {}),
      ...capField(patch.spendingCapUsd),
    });
    // A parent's lowered cap lowers its children's too: forget() drops the children's entries with the parent's.
    this.forget(tenantId);
    return tenantOf(tenant);
  }

  onboard(request: Parameters<TenantClient['onboard']>[0]): ReturnType<TenantClient['onboard']> {
    return this.client.onboard(request);
  }

  async listRecipes(plan: string): Promise<tenantV1.Recipe[]> {
    return (await this.client.listRecipes({ plan })).recipes;
  }

  /**
   * The active recipe, or null when there is none by that id. Every sign asks, and recipes change only when the
   * tenant service's catalog is edited: a recipe found is reused for the authentication TTL (the same bound on
   * staleness), which keeps a gRPC round trip off each sign. An unknown recipe is never cached.
   */
  async getRecipe(recipeId: string, plan: string): Promise<tenantV1.Recipe | null> {
    const cacheKey = `${plan}\u0000${recipeId}`;
    const cached = this.recipes.get(cacheKey);
    if (cached && cached.until > this.now()) return cached.recipe;
    try {
      const recipe = (await this.client.getRecipe({ recipeId, plan })).recipe ?? null;
      if (recipe && this.options.ttlMs > 0) {
        this.recipes.delete(cacheKey);
        this.recipes.set(cacheKey, { recipe, until: this.now() + this.options.ttlMs });
        // Recipes × plans is a small catalog; the bound only guards against a caller inventing ids.
        if (this.recipes.size > RECIPE_CACHE_MAX) this.recipes.delete(this.recipes.keys().next().value!);
      }
      return recipe;
    } catch (error) {
      if (isCairnError(error) && error.code === 'cairn.not_found') return null;
      throw error;
    }
  }

  private remember(cacheKey: string, entry: CachedKey): void {
    this.cache.delete(cacheKey);
    this.cache.set(cacheKey, entry);
    // Insertion order is age order: drop the oldest past the bound.
    while (this.cache.size > this.options.maxEntries) {
      const oldest = this.cache.keys().next();
      if (oldest.done) break;
      this.cache.delete(oldest.value);
    }
  }
}

function capField(cap: SpendingCapInput): { spendingCap?: { usd?: number } } {
  if (cap === undefined) return {};
  return { spendingCap: cap === null ? {} : { usd: cap } };
}

function dateOf(timestamp: Timestamp | undefined): Date | null {
  return timestamp ? timestampDate(timestamp) : null;
}

function tenantOf(tenant: tenantV1.Tenant | undefined): Tenant {
  if (!tenant) throw new Error('the tenant service answered without a tenant');
  return {
    tenantId: tenant.tenantId,
    name: tenant.name,
    plan: tenant.plan,
    parentTenantId: tenant.parentTenantId || null,
    spendingCapUsd: tenant.spendingCapUsd ?? null,
    auditRetentionDays: tenant.auditRetentionDays,
    auditRetentionDaysMax: tenant.auditRetentionDaysMax,
    rateLimitRps: tenant.rateLimitRps,
    rateLimitDaily: tenant.rateLimitDaily,
    createdAt: dateOf(tenant.createdAt) ?? new Date(0),
    updatedAt: dateOf(tenant.updatedAt) ?? new Date(0),
  };
}

function keyOf(key: tenantV1.ApiKey | undefined): ApiKeyRecord {
  if (!key) throw new Error('the tenant service answered without a key');
  return {
    keyId: key.keyId,
    tenantId: key.tenantId,
    scope: key.scope,
    description: key.description ?? null,
    expiresAt: dateOf(key.expiresAt),
    revokedAt: dateOf(key.revokedAt),
    createdAt: dateOf(key.createdAt) ?? new Date(0),
  };
}
