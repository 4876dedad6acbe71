import type { Meter } from './plans.js';

/** Overage price per unit in USD, by plan and meter (defaults; BILLING_PRICES_JSON overrides any entry). */
export const DEFAULT_PRICES: Readonly<Record<'growth' | 'enterprise', Readonly<Record<Meter, number>>>> = {
  growth: {
    image_sign: 0.01,
    audio_sign: 0.02,
    video_sign: 0.05,
    text_sign: 0.001,
    image_verify: 0.002,
    audio_verify: 0.004,
    video_verify: 0.008,
    lookup: 0.002,
    byok_sign: 0.01,
    anchor_batch: 0.5,
  },
  enterprise: {
    image_sign: 0.008,
    audio_sign: 0.016,
    video_sign: 0.04,
    text_sign: 0.0008,
    image_verify: 0.0015,
    audio_verify: 0.003,
    video_verify: 0.006,
    lookup: 0.0015,
    byok_sign: 0.008,
    anchor_batch: 0.4,
  },
};
