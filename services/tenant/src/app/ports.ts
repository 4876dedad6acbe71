// The ports the tenant directory runs over, declared here (where the use cases can see them) and implemented
// elsewhere: tenants and keys in store/tenants.ts, recipes in store/recipes.ts (Postgres), the payment processor
// in adapters/payments.ts. service.ts builds the implementations and injects them.
import type { PlanName, Scope } from '@cairn/catalog';
import type { apiKeys, tenants } from '../db/schema.js';
import type { Recipe } from '../domain/recipes.js';

export type TenantRecord = typeof tenants.$inferSelect;
export type KeyRecord = Omit<typeof apiKeys.$inferSelect, 'keyHash' | 'expiringNotifiedAt'>;

export interface AuthenticatedKey {
  keyId: string;
  scope: Scope;
  /** null: the key never expires. */
  expiresAt: Date | null;
  tenant: TenantRecord;
}

export interface NewKey {
  key_id: string;
  api_key: string;
  scope: Scope;
  description: string | null;
  expires_at: string | null;
  created_at: string;
}

export interface NewTenantInput {
  name: string;
  email?: string | null;
  plan: PlanName;
  spendingCapUsd?: number | null;
  paymentCustomerRef?: string | null;
}

export interface SettingsPatch {
  auditRetentionDays?: number;
  spendingCapUsd?: number | null;
}

export type KeyRefusal = 'malformed' | 'unknown' | 'revoked' | 'expired';

/** Tenants, their keys and onboarding records (store/tenants.ts, under row-level security). */
export interface OnboardRequest {
  idempotencyKey: string;
  requestHash: string;
  tenant: Omit<NewTenantInput, 'paymentCustomerRef'>;
  attachPayment: () => Promise<string | null>;
  render: (tenant: TenantRecord, key: NewKey) => Record<string, unknown>;
}

/** The onboarding's answer (a replay of the first one for the same key), or busy while that one is still under way. */
export type OnboardOutcome =
  { kind: 'answer'; replayed: boolean; body: Record<string, unknown> } | { kind: 'busy'; retryAfterSeconds: number };

export interface Tenants {
  /** Resolves a presented API key; failures are values so the caller picks the answer. */
  authenticate(apiKey: string): Promise<AuthenticatedKey | { error: KeyRefusal }>;
  getTenant(tenantId: string): Promise<TenantRecord | null>;
  /** The tenant `targetId` if `actor` may manage it (itself or a sub-tenant); null otherwise. */
  findManaged(actorTenantId: string, targetId: string): Promise<TenantRecord | null>;
  /** Self-onboarding, exactly once per Idempotency-Key; `attachPayment` runs with no transaction open. */
  onboard(input: OnboardRequest): Promise<OnboardOutcome>;
  createSubTenant(parentTenantId: string, input: NewTenantInput, actorKeyId?: string | null): Promise<TenantRecord>;
  createKey(
    tenantId: string,
    input: { scope: Scope; description: string | null; expiresAt: Date | null },
    actorTenantId: string,
    actorKeyId?: string | null,
  ): Promise<NewKey>;
  listKeys(tenantId: string, limit: number): Promise<KeyRecord[]>;
  /** Revokes a key of `tenantId`; null when no such key (or not this tenant's). */
  revokeKey(
    tenantId: string,
    keyId: string,
    actorTenantId: string,
    actorKeyId?: string | null,
  ): Promise<KeyRecord | null>;
  updateSettings(
    tenant: TenantRecord,
    patch: SettingsPatch,
    actorTenantId: string,
    actorKeyId?: string | null,
  ): Promise<TenantRecord>;
}

/** The signing recipes (store/recipes.ts). */
export interface Recipes {
  get(recipeId: string): Promise<Recipe | null>;
  list(): Promise<Recipe[]>;
}

export type PaymentOutcome =
  | { ok: true; customerRef: string; paymentMethodRef: string; processor: 'test' | 'stripe' }
  | { ok: false; reason: 'malformed' | 'declined' | 'unavailable'; message: string };

export interface AttachPaymentMethodInput {
  paymentMethodId: string;
  email: string;
  tenantName: string;
  idempotencyKey: string;
}

/** The payment processor onboarding attaches a payment method with (adapters/payments.ts). */
export interface PaymentProcessor {
  readonly mode: 'test' | 'live';
  attachPaymentMethod(input: AttachPaymentMethodInput): Promise<PaymentOutcome>;
}
