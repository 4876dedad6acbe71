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
