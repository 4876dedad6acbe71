import { randomUUID } from 'node:crypto';
import { and, desc, eq, gt, isNotNull, isNull, or, sql, type SQL } from 'drizzle-orm';
import { newEvent, type AnyEvent, type EventDataInput } from '@cairn/events';
import { rowOrNull, setTenant, withRlsSettings, withTenant, type Database, type Tx } from '@cairn/db';
import { CairnError } from '@cairn/errors';
import { newApiKey, newId, parseApiKey } from '@cairn/ids';
import type { Outbox } from '@cairn/runtime';
import { apiKeys, onboardingRequests, tenants } from '../db/schema.js';
import { apiKeyMatches, hashApiKey } from '../domain/api-keys.js';
import { keyState, PLANS, type Scope } from '@cairn/catalog';
import { capAboveParentDetail, capFitsUnder, initialChildCap } from '../domain/tenant-tree.js';
import type { Sealer } from '@cairn/sealing';
import type {
  AuthenticatedKey,
  KeyRecord,
  NewKey,
  NewTenantInput,
  OnboardOutcome,
  OnboardRequest,
  SettingsPatch,
  TenantRecord,
  Tenants,
} from '../app/ports.js';

/** A key as read back (a KeyRecord): its settings, never its hash nor the expiry sweep's mark. */
export const keyRecordColumns = {
  keyId: apiKeys.keyId,
  tenantId: apiKeys.tenantId,
  scope: apiKeys.scope,
  description: apiKeys.description,
  expiresAt: apiKeys.expiresAt,
  revokedAt: apiKeys.revokedAt,
  createdAt: apiKeys.createdAt,
};

/** The onboarding idempotency window: 24 h, as for every Idempotency-Key. */
export const ONBOARD_REPLAY_TTL_DEFAULT_SECONDS = 86_400;
/** How long an onboarding claim stays live: longer than the payment calls' own timeouts (2 × 10 s) and the writes. */
export const ONBOARD_CLAIM_LEASE_SECONDS = 60;

/** Tenants, their keys and onboarding records; every query runs under row-level security. */
export class TenantStore implements Tenants {
  constructor(
    private readonly db: Database,
    private readonly outbox: Outbox,
    private readonly sealer: Sealer,
    /** How long a sealed onboarding answer may be replayed (the idempotency window). */
    private readonly onboardReplayTtlSeconds: number = ONBOARD_REPLAY_TTL_DEFAULT_SECONDS,
  ) {}

  /** Resolves a presented API key; failures are values so the caller picks the answer (always 401 today). */
  async authenticate(
    apiKey: string,
  ): Promise<AuthenticatedKey | { error: 'malformed' | 'unknown' | 'revoked' | 'expired' }> {
    const parsed = parseApiKey(apiKey);
    if (!parsed) return { error: 'malformed' };
    return withRlsSettings(this.db, { 'cairn.key_id': parsed.keyId }, async (tx) => {
      const [key] = await tx.select().from(apiKeys).where(eq(apiKeys.keyId, parsed.keyId));
      // Hash first: only the key's holder learns whether it is revoked or expired.
      if (!key || !apiKeyMatches(apiKey, key.keyHash)) return { error: 'unknown' as const };
      const state = keyState(key);
      if (state !== 'active') return { error: state };
      await setTenant(tx, key.tenantId);
      const [tenant] = await tx.select().from(tenants).where(eq(tenants.tenantId, key.tenantId));
      if (!tenant) return { error: 'unknown' as const };
      return { keyId: key.keyId, scope: key.scope as Scope, expiresAt: key.expiresAt, tenant };
    });
  }

  async getTenant(tenantId: string): Promise<TenantRecord | null> {
    return withTenant(this.db, tenantId, (tx) =>
      rowOrNull(tx.select().from(tenants).where(eq(tenants.tenantId, tenantId))),
    );
  }

  /**
   * The tenant `targetId` if `actor` may manage it: itself, or one of its sub-tenants. Anything else is
   * invisible under the actor's RLS context, so it reads as absent (404), never as forbidden.
   */
  async findManaged(actorTenantId: string, targetId: string): Promise<TenantRecord | null> {
    return withTenant(this.db, actorTenantId, (tx) =>
      rowOrNull(tx.select().from(tenants).where(eq(tenants.tenantId, targetId))),
    );
  }

  /**
   * Self-onboarding, exactly once per Idempotency-Key, as a row state machine (as sign idempotency): a short
   * transaction claims the key (`in_progress`, with a lease), the payment call runs with no transaction open,
   * and a second one creates the tenant and its key and records the sealed answer (`done`), only while this
   * request still holds the claim. A failed payment drops the claim, so the client may retry with the same key;
   * a claim whose lease ran out (its process died) is taken over, the payment call repeated under the same
   * processor idempotency key.
   */
  async onboard(input: OnboardRequest): Promise<OnboardOutcome> {
    const claim = await this.claimOnboarding(input.idempotencyKey, input.requestHash);
    if (claim.kind !== 'run') return claim;
    const byKey = { 'cairn.idempotency_key': input.idempotencyKey };
    const abandon = () =>
      withRlsSettings(this.db, byKey, (tx) =>
        tx
          .delete(onboardingRequests)
          .where(
            and(
              eq(onboardingRequests.idempotencyKey, input.idempotencyKey),
              eq(onboardingRequests.claimId, claim.claimId),
              eq(onboardingRequests.state, 'in_progress'),
            ),
          ),
      ).catch(() => undefined); // if the database cannot drop it now, the lease runs out instead
    try {
      const paymentCustomerRef = await input.attachPayment();
      const body = await withRlsSettings(this.db, byKey, async (tx) => {
        await setTenant(tx, claim.tenantId);
        const tenant = await this.insertTenant(
          tx,
          claim.tenantId,
          null,
          { ...input.tenant, paymentCustomerRef },
          'onboard',
        );
        const key = await this.insertKey(
          tx,
          claim.tenantId,
          { scope: 'admin', description: 'Created by onboarding', expiresAt: null },
          claim.tenantId,
        );
        const rendered = input.render(tenant, key);
        const done = await tx
          .update(onboardingRequests)
          .set({
            state: 'done',
            sealedResponse: this.sealer.seal(JSON.stringify(rendered), input.idempotencyKey),
            claimId: null,
            leaseExpiresAt: null,
          })
          .where(
            and(
              eq(onboardingRequests.idempotencyKey, input.idempotencyKey),
              eq(onboardingRequests.claimId, claim.claimId),
            ),
          )
          .returning({ key: onboardingRequests.idempotencyKey });
        // Our lease ran out and another request took the claim over: it creates the tenant, not us (rolled back).
        if (done.length === 0)
          throw new CairnError(
            'cairn.idempotency.in_progress',
            'This onboarding took too long and was taken over by a retry with the same Idempotency-Key; retry to get its answer.',
          );
        return rendered;
      }).finally(() => this.outbox.flush());
      return { kind: 'answer', replayed: false, body };
    } catch (error) {
      await abandon();
      throw error;
    }
  }

  /** The short first step of `onboard`: claim the key, or say what holds it (a replay throws its refusals). */
  private async claimOnboarding(
    idempotencyKey: string,
    requestHash: string,
  ): Promise<
    | { kind: 'run'; claimId: string; tenantId: string }
    | { kind: 'answer'; replayed: true; body: Record<string, unknown> }
    | { kind: 'busy'; retryAfterSeconds: number }
  > {
    const claimId = randomUUID();
    const tenantId = newId('tenant');
    const lease = sql`now() + make_interval(secs => ${ONBOARD_CLAIM_LEASE_SECONDS})`;
    return withRlsSettings(this.db, { 'cairn.idempotency_key': idempotencyKey }, async (tx) => {
      const claimed = await tx
        .insert(onboardingRequests)
        .values({ idempotencyKey, requestHash, tenantId, state: 'in_progress', claimId, leaseExpiresAt: lease })
        .onConflictDoNothing()
        .returning({ key: onboardingRequests.idempotencyKey });
      if (claimed.length > 0) return { kind: 'run', claimId, tenantId } as const;
      const [previous] = await tx
        .select({
          requestHash: onboardingRequests.requestHash,
          sealedResponse: onboardingRequests.sealedResponse,
          state: onboardingRequests.state,
          leaseSecondsLeft: sql<number>`greatest(0, extract(epoch from ${onboardingRequests.leaseExpiresAt} - now()))::float8`,
          expired: this.replayExpired(),
        })
        .from(onboardingRequests)
        .where(eq(onboardingRequests.idempotencyKey, idempotencyKey));
      // Dropped by a failed attempt between our insert and this read: the client may simply retry.
      if (!previous) return { kind: 'busy', retryAfterSeconds: 1 } as const;
      // Past the window the answer is refused even before the sweep has dropped it: the key is never handed out again.
      if (previous.expired && previous.state === 'done') {
        throw new CairnError(
          'cairn.onboard.idempotency_expired',
          `This Idempotency-Key was used more than ${formatWindow(this.onboardReplayTtlSeconds)} ago; its answer, API key included, is no longer kept and is never shown again. The tenant it created exists: manage its keys with an admin key, or send a new Idempotency-Key only to create another tenant.`,
        );
      }
      if (previous.requestHash !== requestHash)
        throw new CairnError(
          'cairn.onboard.idempotency_conflict',
          'This Idempotency-Key was used with a different request body.',
        );
      if (previous.state === 'done') {
        if (!previous.sealedResponse)
          throw new CairnError(
            'cairn.onboard.idempotency_conflict',
            'This Idempotency-Key is in use by a request that did not complete.',
          );
        return {
          kind: 'answer',
          replayed: true,
          body: JSON.parse(this.sealer.open(previous.sealedResponse, idempotencyKey)) as Record<string, unknown>,
        } as const;
      }
      if (previous.leaseSecondsLeft > 0)
        return {
          kind: 'busy',
          retryAfterSeconds: Math.max(1, Math.min(2, Math.ceil(previous.leaseSecondsLeft))),
        } as const;
      const taken = await tx
        .update(onboardingRequests)
        .set({ claimId, tenantId, leaseExpiresAt: lease })
        .where(
          and(
            eq(onboardingRequests.idempotencyKey, idempotencyKey),
            eq(onboardingRequests.state, 'in_progress'),
            sql`${onboardingRequests.leaseExpiresAt} <= now()`,
          ),
        )
        .returning({ key: onboardingRequests.idempotencyKey });
      return taken.length > 0
        ? ({ kind: 'run', claimId, tenantId } as const)
        : ({ kind: 'busy', retryAfterSeconds: 2 } as const);
    });
  }

  /**
   * Drops the sealed onboarding answers older than the replay window (nulled, not deleted: the row keeps the
   * key claimed, so a late replay is refused rather than creating a second tenant). Runs as
   * `cairn.system = 'onboard-replay-expiry'`, which opens only rows still holding an answer.
   */
  async dropExpiredOnboardingAnswers(): Promise<number> {
    return this.db.transaction(async (tx) => {
      await tx.execute(sql`select set_config('cairn.system', 'onboard-replay-expiry', true)`);
      const dropped = await tx
        .update(onboardingRequests)
        .set({ sealedResponse: null })
        .where(and(isNotNull(onboardingRequests.sealedResponse), this.replayExpired()))
        .returning({ key: onboardingRequests.idempotencyKey });
      return dropped.length;
    });
  }

  /** Whether an onboarding row is past the replay window, by the database's clock (the one that set created_at). */
  private replayExpired(): SQL<boolean> {
    return sql<boolean>`${onboardingRequests.createdAt} <= now() - make_interval(secs => ${this.onboardReplayTtlSeconds})`;
  }

  /** A primary enterprise tenant and its first admin key (the operator's bootstrap command). */
  async bootstrap(input: { name: string; email?: string | null }): Promise<{ tenant: TenantRecord; key: NewKey }> {
    const tenantId = newId('tenant');
    return withTenant(this.db, tenantId, async (tx) => {
      const tenant = await this.insertTenant(
        tx,
        tenantId,
        null,
        { name: input.name, email: input.email ?? null, plan: 'enterprise' },
        'bootstrap',
      );
      const key = await this.insertKey(
        tx,
        tenantId,
        { scope: 'admin', description: 'Created by admin bootstrap', expiresAt: null },
        tenantId,
      );
      return { tenant, key };
    });
  }

  /**
   * A sub-tenant of `parent`. Its cap (the parent's when none is asked for) must fit under the parent's
   * current cap, read under a row lock so a concurrent change of the parent's cap cannot slip between.
   */
  async createSubTenant(
    parentTenantId: string,
    input: NewTenantInput,
    actorKeyId: string | null = null,
  ): Promise<TenantRecord> {
    const tenantId = newId('tenant');
    return withTenant(this.db, parentTenantId, async (tx) => {
      const parentCap = await this.lockCap(tx, parentTenantId);
      const cap = initialChildCap(parentCap, input.spendingCapUsd);
      assertCapFits(parentCap, cap);
      const child = await this.insertTenant(
        tx,
        tenantId,
        parentTenantId,
        { ...input, spendingCapUsd: cap },
        'subtenant',
      );
      await this.adminChanged(tx, parentTenantId, tenantId, {
        action: 'tenant.sub_tenant_created',
        object_type: 'tenant',
        object_id: tenantId,
        actor_key_id: actorKeyId,
        before: null,
        after: { name: child.name, plan: child.plan, spending_cap_usd: child.spendingCapUsd },
      });
      return child;
    }).finally(() => this.outbox.flush());
  }

  async createKey(
    tenantId: string,
    input: { scope: Scope; description: string | null; expiresAt: Date | null },
    actorTenantId: string,
    actorKeyId: string | null = null,
  ): Promise<NewKey> {
    return withTenant(this.db, tenantId, async (tx) => {
      const key = await this.insertKey(tx, tenantId, input, actorTenantId);
      // The key's settings only: its secret (api_key) never enters an event.
      await this.adminChanged(tx, actorTenantId, tenantId, {
        action: 'api_key.created',
        object_type: 'api_key',
        object_id: key.key_id,
        actor_key_id: actorKeyId,
        before: null,
        after: { tenant_id: tenantId, scope: key.scope, description: key.description, expires_at: key.expires_at },
      });
      return key;
    }).finally(() => this.outbox.flush());
  }

  async listKeys(tenantId: string, limit: number): Promise<KeyRecord[]> {
    return withTenant(this.db, tenantId, (tx) =>
      tx
        .select(keyRecordColumns)
        .from(apiKeys)
        .where(eq(apiKeys.tenantId, tenantId))
        .orderBy(desc(apiKeys.createdAt))
        .limit(limit),
    );
  }

  /** Revokes a key of `tenantId`; null when no such key (or not this tenant's). Revoking twice is a no-op. */
  async revokeKey(
    tenantId: string,
    keyId: string,
    actorTenantId: string,
    actorKeyId: string | null = null,
  ): Promise<KeyRecord | null> {
    return withTenant(this.db, tenantId, async (tx) => {
      const [existing] = await tx
        .select()
        .from(apiKeys)
        .where(and(eq(apiKeys.keyId, keyId), eq(apiKeys.tenantId, tenantId)));
      if (!existing) return null;
      if (existing.revokedAt) return stripHash(existing);
      const [revoked] = await tx
        .update(apiKeys)
        .set({ revokedAt: new Date() })
        .where(and(eq(apiKeys.keyId, keyId), isNull(apiKeys.revokedAt)))
        .returning();
      await this.emit(tx, newEvent('key.revoked', tenantId, { key_id: keyId, actor_tenant_id: actorTenantId }));
      await this.adminChanged(tx, actorTenantId, tenantId, {
        action: 'api_key.revoked',
        object_type: 'api_key',
        object_id: keyId,
        actor_key_id: actorKeyId,
        before: { tenant_id: tenantId, scope: existing.scope, revoked_at: null },
        after: { tenant_id: tenantId, scope: existing.scope, revoked_at: revoked?.revokedAt?.toISOString() ?? null },
      });
      return revoked ? stripHash(revoked) : null;
    }).finally(() => this.outbox.flush());
  }

  /**
   * Changes a tenant's settings as `actorTenantId` (the tenant itself or its parent; the caller checked who may
   * change the cap). Runs under the actor's row-level context, which sees both the target and, for a parent,
   * its children. A sub-tenant's new cap must fit under its parent's; a parent's new cap lowers every child cap
   * above it (or absent) to it, in the same transaction, so no child ever holds a cap above its parent's.
   */
  async updateSettings(
    tenant: TenantRecord,
    patch: SettingsPatch,
    actorTenantId: string,
    actorKeyId: string | null = null,
  ): Promise<TenantRecord> {
    return withTenant(this.db, actorTenantId, async (tx) => {
      if (patch.spendingCapUsd !== undefined) {
        // Parent row first, in both cases: the same lock order as createSubTenant, so they serialize.
        if (tenant.parentTenantId) assertCapFits(await this.lockCap(tx, tenant.parentTenantId), patch.spendingCapUsd);
        else await this.lockCap(tx, tenant.tenantId);
      }
      const [updated] = await tx
        .update(tenants)
        .set({
          ...(patch.auditRetentionDays !== undefined ? { auditRetentionDays: patch.auditRetentionDays } : {}),
          ...(patch.spendingCapUsd !== undefined ? { spendingCapUsd: patch.spendingCapUsd } : {}),
          updatedAt: new Date(),
        })
        .where(eq(tenants.tenantId, tenant.tenantId))
        .returning();
      if (!updated) throw new CairnError('cairn.not_found', 'Tenant not found');
      const changes: Record<string, { from: unknown; to: unknown }> = {};
      if (patch.auditRetentionDays !== undefined)
        changes.audit_retention_days = { from: tenant.auditRetentionDays, to: updated.auditRetentionDays };
      if (patch.spendingCapUsd !== undefined)
        changes.spending_cap_usd = { from: tenant.spendingCapUsd, to: updated.spendingCapUsd };
      await this.emit(tx, newEvent('settings.changed', tenant.tenantId, { changes, actor_tenant_id: actorTenantId }));
      await this.adminChanged(tx, actorTenantId, tenant.tenantId, {
        action: 'tenant.settings_changed',
        object_type: 'tenant',
        object_id: tenant.tenantId,
        actor_key_id: actorKeyId,
        before: Object.fromEntries(Object.entries(changes).map(([name, change]) => [name, change.from])),
        after: Object.fromEntries(Object.entries(changes).map(([name, change]) => [name, change.to])),
      });
      const newCap = patch.spendingCapUsd;
      if (newCap !== undefined && newCap !== null && !tenant.parentTenantId) {
        const above = await tx
          .select({ tenantId: tenants.tenantId, spendingCapUsd: tenants.spendingCapUsd })
          .from(tenants)
          .where(
            and(
              eq(tenants.parentTenantId, tenant.tenantId),
              or(isNull(tenants.spendingCapUsd), gt(tenants.spendingCapUsd, newCap)),
            ),
          )
          .for('update');
        for (const child of above) {
          await tx
            .update(tenants)
            .set({ spendingCapUsd: newCap, updatedAt: new Date() })
            .where(eq(tenants.tenantId, child.tenantId));
          await this.emit(
            tx,
            newEvent('settings.changed', child.tenantId, {
              changes: { spending_cap_usd: { from: child.spendingCapUsd, to: newCap } },
              actor_tenant_id: actorTenantId,
              reason: 'parent_cap_lowered',
            }),
          );
        }
      }
      return updated;
    }).finally(() => this.outbox.flush());
  }

  /** The tenant's cap, its row locked until the transaction ends. */
  private async lockCap(tx: Tx, tenantId: string): Promise<number | null> {
    const [row] = await tx
      .select({ cap: tenants.spendingCapUsd })
      .from(tenants)
      .where(eq(tenants.tenantId, tenantId))
      .for('update');
    if (!row) throw new CairnError('cairn.not_found', 'Tenant not found');
    return row.cap;
  }

  private async insertTenant(
    tx: Tx,
    tenantId: string,
    parentTenantId: string | null,
    input: NewTenantInput,
    via: string,
  ): Promise<TenantRecord> {
    const plan = PLANS[input.plan];
    const [tenant] = await tx
      .insert(tenants)
      .values({
        tenantId,
        parentTenantId,
        name: input.name,
        email: input.email ?? null,
        plan: input.plan,
        spendingCapUsd: input.spendingCapUsd ?? null,
        auditRetentionDays: plan.audit.defaultRetentionDays,
        rateLimitRps: plan.rateLimits.rps,
        rateLimitDaily: plan.rateLimits.daily,
        paymentCustomerRef: input.paymentCustomerRef ?? null,
      })
      .returning();
    if (!tenant) throw new Error('tenant insert returned nothing');
    const data = { tenant_id: tenantId, name: input.name, plan: input.plan, parent_tenant_id: parentTenantId, via };
    await this.emit(tx, newEvent('tenant.created', tenantId, data));
    // The parent's own log also records that it made a sub-tenant.
    if (parentTenantId) await this.emit(tx, newEvent('tenant.created', parentTenantId, data));
    return tenant;
  }

  private async insertKey(
    tx: Tx,
    tenantId: string,
    input: { scope: Scope; description: string | null; expiresAt: Date | null },
    actorTenantId: string,
  ): Promise<NewKey> {
    const { keyId, apiKey } = newApiKey();
    const [row] = await tx
      .insert(apiKeys)
      .values({
        keyId,
        tenantId,
        keyHash: hashApiKey(apiKey),
        scope: input.scope,
        description: input.description,
        expiresAt: input.expiresAt,
      })
      .returning();
    if (!row) throw new Error('key insert returned nothing');
    const key: NewKey = {
      key_id: keyId,
      api_key: apiKey,
      scope: input.scope,
      description: input.description,
      expires_at: input.expiresAt?.toISOString() ?? null,
      created_at: row.createdAt.toISOString(),
    };
    await this.emit(
      tx,
      newEvent('key.created', tenantId, {
        key_id: keyId,
        scope: input.scope,
        expires_at: key.expires_at,
        actor_tenant_id: actorTenantId,
      }),
    );
    return key;
  }

  /**
   * An admin change's audit event, in the acting tenant's log and, when it acted on a sub-tenant, in that one's too
   * (each sees who changed it).
   */
  private async adminChanged(
    tx: Tx,
    actorTenantId: string,
    targetTenantId: string,
    data: Omit<EventDataInput<'admin.changed'>, 'actor_tenant_id'>,
  ): Promise<void> {
    const payload = { ...data, actor_tenant_id: actorTenantId };
    await this.emit(tx, newEvent('admin.changed', actorTenantId, payload));
    if (targetTenantId !== actorTenantId) await this.emit(tx, newEvent('admin.changed', targetTenantId, payload));
  }

  private emit(tx: Tx, event: AnyEvent): Promise<void> {
    return this.outbox.enqueue(tx, event);
  }
}

function formatWindow(seconds: number): string {
  if (seconds % 3600 === 0) return `${seconds / 3600} h`;
  return `${seconds} s`;
}

function assertCapFits(parentCap: number | null, cap: number | null): void {
  if (capFitsUnder(parentCap, cap)) return;
  throw new CairnError('cairn.tenant.spending_cap_above_parent', capAboveParentDetail(parentCap ?? 0, cap), {
    errors: [{ path: 'spending_cap_usd', message: `at most ${(parentCap ?? 0).toFixed(2)} (the parent's cap)` }],
  });
}

function stripHash(row: typeof apiKeys.$inferSelect): KeyRecord {
  const { keyHash: _hash, ...rest } = row;
  return rest;
}
