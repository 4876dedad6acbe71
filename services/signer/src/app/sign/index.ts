// One sign, in steps: accept.ts → produce.ts (c2pa.ts) → record.ts → anchor.ts, orchestrated by sign-asset.ts.
export { signAsset } from './sign-asset.js';
export type { PipelineDeps, SignProgress, SignProgressStage, SignRequest, SignResult, SignStage } from './deps.js';
