/**
 * The plan catalog, the one copy every service reads (docs/decisions/0006-one-catalog.md): the spec's quota, retention
 * and metering tables, plus Cairn's default request limits. Enterprise quotas are per contract (tenant configuration,
 * billing's per-tenant quotas); `null` means "not offered". text_sign, audio_verify and video_verify quotas are "not
 * shown" by the spec: Cairn's choices.
 */
export const PLAN_NAMES = ['free', 'developer', 'growth', 'enterprise'] as const;
export type PlanName = (typeof PLAN_NAMES)[number];

export const METERS = [
  'image_sign',
  'audio_sign',
  'video_sign',
  'text_sign',
  'image_verify',
  'audio_verify',
  'video_verify',
  'lookup',
  'byok_sign',
  'anchor_batch',
] as const;
export type Meter = (typeof METERS)[number];

/** A monthly quota: null = not offered on the plan; 'contract' = set per tenant (enterprise). */
export type Quota = number | null | 'contract';

export interface Plan {
  name: PlanName;
  /** Monthly quota per meter. */
  quotas: Readonly<Record<Meter, Quota>>;
  audit: { defaultRetentionDays: number; maxRetentionDays: number };
  rateLimits: { rps: number; daily: number };
  /** Self-serve through POST /v1/onboard (enterprise is provisioned by Cairn). */
  selfServe: boolean;
  requiresPaymentMethod: boolean;
  /** Rank for "a parent may create sub-tenants on its own plan or a lower one". */
  rank: number;
  /**
   * May create sub-tenants. Not on free or developer: every sub-tenant has its own quotas, so a tenant that
   * pays nothing (or little) could otherwise multiply its included units by making children.
   */
  subTenants: boolean;
  /**
   * Upload sessions (POST /v1/uploads): the largest file one takes ('direct': no larger than a direct upload,
   * UPLOAD_MAX_BYTES), how many may be open (created, not yet used or expired) at once, and how many declared bytes
   * those may add up to. The operator's UPLOAD_SESSION_MAX_BYTES caps every plan.
   */
  uploads: { maxSessionBytes: number | 'direct'; maxOpenSessions: number; maxOutstandingBytes: number };
}

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

const notOffered = null;

export const PLANS: Readonly<Record<PlanName, Plan>> = {
  free: {
    name: 'free',
    quotas: {
      image_sign: 50,
      audio_sign: notOffered,
      video_sign: notOffered,
      text_sign: notOffered,
      image_verify: 100,
      audio_verify: notOffered,
      video_verify: notOffered,
      lookup: 100,
      byok_sign: notOffered,
      anchor_batch: notOffered,
    },
    audit: { defaultRetentionDays: 30, maxRetentionDays: 30 },
    rateLimits: { rps: 5, daily: 5_000 },
    selfServe: true,
    requiresPaymentMethod: false,
    rank: 0,
    subTenants: false,
    uploads: { maxSessionBytes: 'direct', maxOpenSessions: 2, maxOutstandingBytes: 150 * MiB },
  },
  developer: {
    name: 'developer',
    quotas: {
      image_sign: 1_000,
      audio_sign: 500,
      video_sign: 200,
      text_sign: 5_000,
      image_verify: 5_000,
      audio_verify: 5_000,
      video_verify: 5_000,
      lookup: 5_000,
      byok_sign: notOffered,
      anchor_batch: notOffered,
    },
    audit: { defaultRetentionDays: 30, maxRetentionDays: 30 },
    rateLimits: { rps: 20, daily: 100_000 },
    selfServe: true,
    requiresPaymentMethod: true,
    rank: 1,
    subTenants: false,
    uploads: { maxSessionBytes: 1 * GiB, maxOpenSessions: 5, maxOutstandingBytes: 2 * GiB },
  },
  growth: {
    name: 'growth',
    quotas: {
      image_sign: 20_000,
      audio_sign: 10_000,
      video_sign: 5_000,
      text_sign: 100_000,
      image_verify: 50_000,
      audio_verify: 50_000,
      video_verify: 50_000,
      lookup: 50_000,
      byok_sign: notOffered,
      anchor_batch: 3_000,
    },
    audit: { defaultRetentionDays: 365, maxRetentionDays: 365 },
    rateLimits: { rps: 100, daily: 1_000_000 },
    selfServe: true,
    requiresPaymentMethod: true,
    rank: 2,
    subTenants: true,
    uploads: { maxSessionBytes: 5 * GiB, maxOpenSessions: 20, maxOutstandingBytes: 20 * GiB },
  },
  enterprise: {
    name: 'enterprise',
    quotas: {
      image_sign: 'contract',
      audio_sign: 'contract',
      video_sign: 'contract',
      text_sign: 'contract',
      image_verify: 'contract',
      audio_verify: 'contract',
      video_verify: 'contract',
      lookup: 'contract',
      byok_sign: 'contract',
      anchor_batch: 'contract',
    },
    audit: { defaultRetentionDays: 365, maxRetentionDays: 2555 },
    rateLimits: { rps: 500, daily: 10_000_000 },
    selfServe: false,
    requiresPaymentMethod: false,
    rank: 3,
    subTenants: true,
    uploads: { maxSessionBytes: 5 * GiB, maxOpenSessions: 50, maxOutstandingBytes: 100 * GiB },
  },
};

export function isPlanName(value: string): value is PlanName {
  return (PLAN_NAMES as readonly string[]).includes(value);
}

export function offersMeter(plan: PlanName, meter: Meter): boolean {
  return PLANS[plan].quotas[meter] !== null;
}

export function isMeter(value: string): value is Meter {
  return (METERS as readonly string[]).includes(value);
}

/** Plans whose use above quota is billed per unit instead of refused. */
export function billsOverage(plan: PlanName): boolean {
  return plan === 'growth' || plan === 'enterprise';
}
