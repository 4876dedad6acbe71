import * as anchors from '../routes/anchors.js';
import * as apiDocs from '../routes/api-docs.js';
import * as audit from '../routes/audit.js';
import * as c2paRepository from '../routes/c2pa-repository.js';
import * as c2paResolution from '../routes/c2pa-resolution.js';
import * as errorDocs from '../routes/error-docs.js';
import * as jobs from '../routes/jobs.js';
import * as lookup from '../routes/lookup.js';
import * as onboard from '../routes/onboard.js';
import * as page from '../routes/page.js';
import * as recipes from '../routes/recipes.js';
import * as sign from '../routes/sign.js';
import * as signingCredentials from '../routes/signing-credentials.js';
import * as tenants from '../routes/tenants.js';
import * as uploadSessions from '../routes/upload-sessions.js';
import * as usage from '../routes/usage.js';
import * as verify from '../routes/verify.js';
import * as verifyPage from '../routes/verify-page.js';
import * as webhooks from '../routes/webhooks.js';
import type { OperationDoc } from './describe.js';

export type { OperationDoc } from './describe.js';

/**
 * The route modules that serve the API. Each describes its own operations beside its routes (its `operations`
 * export, written with describe.ts), so the description of a route is read and changed where the route is; this
 * list only gathers them. Their order is the order of the document's tags.
 */
const ROUTE_MODULES: ReadonlyArray<{ operations: readonly OperationDoc[]; staticPaths?: readonly string[] }> = [
  onboard,
  tenants,
  recipes,
  signingCredentials,
  sign,
  jobs,
  verify,
  usage,
  lookup,
  audit,
  anchors,
  uploadSessions,
  webhooks,
  c2paResolution,
  c2paRepository,
  page,
  verifyPage,
  errorDocs,
  apiDocs,
];

/** Every operation the gateway serves (test/openapi.test.ts checks coverage both ways against the router). */
export const OPERATIONS: readonly OperationDoc[] = ROUTE_MODULES.flatMap((m) => m.operations);

/** Paths served that are not operations: static files of the pages above. */
export const STATIC_PATHS: readonly string[] = ROUTE_MODULES.flatMap((m) => m.staticPaths ?? []);
