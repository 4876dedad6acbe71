/**
 * The spec's meters and monthly quotas (Limits section), billing's own copy: no service reads another's code
 * or schema. Enterprise quotas are per contract (billing.quotas); a meter without one has no included units
 * and is billed per unit from the first.
 */
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
export const PLAN_NAMES = ['free', 'developer', 'growth', 'enterprise'] as const;
export type PlanName = (typeof PLAN_NAMES)[number];

/** null = not offered on the plan; 'contract' = set per tenant (enterprise). */
export type Quota = number | null | 'contract';

const no = null;
export const QUOTAS: Readonly<Record<PlanName, Readonly<Record<Meter, Quota>>>> = {
  free: {
    image_sign: 50,
    audio_sign: no,
    video_sign: no,
    text_sign: no,
    image_verify: 100,
    audio_verify: no,
    video_verify: no,
    lookup: 100,
    byok_sign: no,
    anchor_batch: no,
  },
  // text_sign, audio_verify and video_verify quotas are "not shown" by the spec: Cairn's choices.
  developer: {
    image_sign: 1_000,
    audio_sign: 500,
    video_sign: 200,
    text_sign: 5_000,
    image_verify: 5_000,
    audio_verify: 5_000,
    video_verify: 5_000,
    lookup: 5_000,
    byok_sign: no,
    anchor_batch: no,
  },
  growth: {
    image_sign: 20_000,
    audio_sign: 10_000,
    video_sign: 5_000,
    text_sign: 100_000,
    image_verify: 50_000,
    audio_verify: 50_000,
    video_verify: 50_000,
    lookup: 50_000,
    byok_sign: no,
    anchor_batch: 3_000,
  },
  enterprise: {
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
};

/** Plans whose use above quota is billed per unit instead of refused. */
export function billsOverage(plan: PlanName): boolean {
  return plan === 'growth' || plan === 'enterprise';
}

export function isMeter(value: string): value is Meter {
  return (METERS as readonly string[]).includes(value);
}

export function isPlanName(value: string): value is PlanName {
  return (PLAN_NAMES as readonly string[]).includes(value);
}

/** The UTC calendar month holding `now`: [start, end). */
export function periodOf(now: Date): { start: Date; end: Date; key: string } {
  const start = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const end = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1));
  return { start, end, key: start.toISOString().slice(0, 10) };
}
