export { ERROR_CATALOG, isErrorCode, type ErrorCode } from './catalog.js';
export { errorGuidance } from './guidance.js';
export {
  absentAsUndefined,
  asCairnError,
  CairnError,
  isCairnError,
  toJobProblem,
  toProblem,
  PROBLEM_CONTENT_TYPE,
  type JobProblem,
  type ProblemDocument,
} from './problem.js';
export { validationError, parseOrThrow } from './validation.js';
export { dependencyUnavailable, isDependencyUnavailable, UNAVAILABLE_RETRY_AFTER_SECONDS } from './unavailable.js';
export { parseSignMetadata, signMetadataSchema, SIGN_METADATA_FIELDS, type SignMetadata } from './sign-metadata.js';
