export {
  billsOverage,
  isMeter,
  isPlanName,
  METERS,
  offersMeter,
  PLAN_NAMES,
  PLANS,
  type Meter,
  type Plan,
  type PlanName,
  type Quota,
} from './plans.js';
export { DEFAULT_PRICES } from './prices.js';
export { isScope, keyState, scopeAllows, SCOPES, type KeyState, type Scope } from './api-keys.js';
export {
  FINGERPRINT_ALG,
  IMAGE_WATERMARK_ALGS,
  isImageWatermarkAlg,
  WATERMARK_ALG,
  type FingerprintAlg,
  type ImageWatermarkAlg,
  type KeyedImageWatermarkAlg,
  type WatermarkAlg,
} from './algorithms.js';
