export {
  buildAndSign,
  C2paSignError,
  C2paTimeStampError,
  SIGN_SETTINGS,
  newBuilder,
  timeStampUnavailable,
} from './sign.js';
export { buildManifestPlan, generationAssertionData, C2paInputError } from './manifest-definition.js';
export type { ManifestDefinition, ManifestPlan, AssertionDefinition } from './manifest-definition.js';
export { activeManifestLabel } from './manifest-label.js';
export * from './labels.js';
export { EMBEDDABLE_MIME_TYPES, isEmbeddableMimeType, isSidecarMimeType, SIDECAR_MIME_TYPES } from './types.js';
export type {
  BuildAndSignInput,
  BuildAndSignResult,
  C2paSigner,
  EmbeddableMimeType,
  SidecarMimeType,
  SignableMimeType,
  GenerationMetadata,
  SoftBindingInput,
  ThumbnailInput,
} from './types.js';
