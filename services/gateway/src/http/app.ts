import express, { type Express, type RequestHandler, type Router } from 'express';
import { publicUrl } from '@cairn/config';
import type { Logger } from '@cairn/logging';
import type { ServiceMetrics } from '@cairn/telemetry';
import type { BlobStore } from '@cairn/blob';
import type { signerV1, softbindingV1, verifierV1, watermarkV1 } from '@cairn/proto';
import type { BillingClient } from '../app/metering.js';
import type { ClientOf } from '@cairn/rpc';
import type { RedisRateLimiter } from '../adapters/rate-limit.js';
import type { AuthFailureLimit } from '../adapters/auth-failures.js';
import type { SignAssets } from '../app/sign.js';
import type { VerifyFiles } from '../app/verify.js';
import type { TenantDirectory } from '../adapters/tenant-directory.js';
import { authenticate } from './auth.js';
import { isUploadPut, requestDeadline, uploadPutDeadlineMs } from './request-deadline.js';
import { addressRateLimit, authFailureLimit, tenantRateLimit } from './limits.js';
import { errorHandler, notFound } from './problem.js';
import { requestContext } from './request-context.js';
import { onboardRoutes } from './routes/onboard.js';
import { pageRoutes } from './routes/page.js';
import { verifyPageRoutes } from './routes/verify-page.js';
import { errorDocsRoutes } from './routes/error-docs.js';
import { apiDocsRoutes } from './routes/api-docs.js';
import { buildOpenApiDocument } from './openapi/document.js';
import { internalApiReference } from '../adapters/internal-api-reference.js';
import { signRoutes } from './routes/sign.js';
import { jobRoutes } from './routes/jobs.js';
import { verifyRoutes } from './routes/verify.js';
import { uploadSessionRoutes } from './routes/upload-sessions.js';
import type { UploadSessions } from '../app/upload-sessions.js';
import { recipeRoutes } from './routes/recipes.js';
import { signingCredentialRoutes } from './routes/signing-credentials.js';
import { tenantRoutes } from './routes/tenants.js';
import { webhookRoutes, type WebhookClient } from './routes/webhooks.js';
import { auditRoutes, type AuditClient } from './routes/audit.js';
import { usageRoutes } from './routes/usage.js';
import { lookupRoutes } from './routes/lookup.js';
import { anchorRoutes, type AnchorClient } from './routes/anchors.js';
import { c2paResolutionRoutes } from './routes/c2pa-resolution.js';
import { c2paRepositoryRoutes } from './routes/c2pa-repository.js';
import type { DestinationPolicy } from '@cairn/outbound';

export interface GatewayDeps {
  logger: Logger;
  metrics: ServiceMetrics;
  /** Tenants, keys, onboarding and recipes: the tenant service, authentications cached briefly. */
  tenants: TenantDirectory;
  limiter: RedisRateLimiter;
  /** Failed authentications per client address, checked before any database work. */
  authFailures: AuthFailureLimit;
  docsUrl: string;
  /** Express "trust proxy" setting: which hops may set X-Forwarded-For. */
  trustProxy: string;
  onboardPerMinute: number;
  blobs: BlobStore;
  signer: ClientOf<typeof signerV1.SignerService>;
  verifier: ClientOf<typeof verifierV1.VerifierService>;
  /** POST /v1/sign: recipe rules, idempotency, per-tenant concurrency, metering, the signer call. */
  signing: SignAssets;
  publicBaseUrl: string;
  uploadMaxBytes: number;
  /** REQUEST_TIMEOUT_MS: every request's body arrives within this; an upload PUT's deadline adds its size's worth. */
  requestDeadlineMs: number;
  /** UPLOAD_SESSION_MAX_BYTES and UPLOAD_MIN_BYTES_PER_SECOND. */
  uploadDeadline: { maxSessionBytes: number; minBytesPerSecond: number };
  publicVerifyPerMinute: number;
  /** POST /v1/verify: metering, sync or job, the verifier call. */
  verifying: VerifyFiles;
  publicVerifyMaxBytes: number;
  /** Webhook endpoints and deliveries (the webhook service). */
  webhooks: WebhookClient;
  /** Metering (reserve/commit/release) and usage. */
  billing: BillingClient;
  audit: AuditClient;
  /** Anchor batches and inclusion proofs (the anchor service). */
  anchor: AnchorClient;
  softbinding: ClientOf<typeof softbindingV1.SoftBindingService>;
  /** Watermark detection and payload resolution (the C2PA Soft Binding Resolution API). */
  watermark: ClientOf<typeof watermarkV1.WatermarkService>;
  /** Unauthenticated C2PA soft-binding queries per client address per minute. */
  publicResolutionPerMinute: number;
  /** The Soft Binding Resolution API's byReference: the outbound address policy and the fetch's deadline. */
  resolutionOutbound: DestinationPolicy;
  referenceFetchTimeoutMs: number;
  referenceFetchMaxBytes: number;
  referenceFetchesAtOnce: number;
  /** Largest manifest store POST /c2pa/v1/manifests takes. */
  storedManifestMaxBytes: number;
  /** Upload sessions (POST /v1/uploads, the signed PUT, upload_id in sign and verify). */
  uploadSessions: UploadSessions;
}

/** The API's version in the OpenAPI document (the gateway package's). */
const API_VERSION = '0.1.0';

/**
 * Paths that need an API key. Public: onboarding, manifests, the /v pages, the C2PA Soft Binding Resolution API
 * (/c2pa/v1); verify takes a key optionally
 * (its routes authenticate themselves); anything else is unknown (404).
 */
const AUTHENTICATED = [
  '/v1/signing-credentials',
  '/v1/tenants',
  '/v1/recipes',
  '/v1/sign',
  '/v1/jobs',
  '/v1/assets',
  '/v1/usage',
  '/v1/audit',
  '/v1/webhooks',
  '/v1/anchors',
  '/v1/lookup',
];

export function createApp(deps: GatewayDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('trust proxy', deps.trustProxy);
  app.set('etag', false);
  app.use(requestPipeline(deps));
  app.use(
    '/v1/onboard',
    addressRateLimit(deps.limiter, 'onboard', { limit: deps.onboardPerMinute, windowSeconds: 60 }),
  );
  app.use(onboardRoutes({ tenants: deps.tenants, docsUrl: deps.docsUrl }));
  app.use(AUTHENTICATED, authenticate(deps.tenants), tenantRateLimit(deps.limiter));
  for (const router of [...tenantApiRoutes(deps), ...publicRoutes(deps)]) app.use(router);
  app.use(webhookRoutes({ webhooks: deps.webhooks }));
  app.use(notFound);
  app.use(errorHandler(deps.logger, deps.docsUrl));
  return app;
}

/** What every request passes before its route, in this order. */
function requestPipeline(deps: GatewayDeps): RequestHandler[] {
  return [
    // Every answer: a browser must never sniff a manifest, thumbnail or JSON body into HTML or script.
    (_req, res, next) => {
      res.setHeader('X-Content-Type-Options', 'nosniff');
      next();
    },
    requestDeadline((req) =>
      isUploadPut(req)
        ? uploadPutDeadlineMs(req, { baseMs: deps.requestDeadlineMs, ...deps.uploadDeadline })
        : deps.requestDeadlineMs,
    ),
    requestContext(deps.logger, deps.metrics),
    // Before the JSON parser: an upload PUT's body is the file, streamed whatever its Content-Type.
    uploadSessionRoutes({ sessions: deps.uploadSessions, tenants: deps.tenants, limiter: deps.limiter }),
    express.json({ limit: '1mb', strict: true }),
    authFailureLimit(deps.authFailures),
  ];
}

/** The tenant API under /v1: keyed (AUTHENTICATED), except verify, whose routes authenticate themselves. */
function tenantApiRoutes(deps: GatewayDeps): Router[] {
  return [
    tenantRoutes({ tenants: deps.tenants }),
    recipeRoutes({ tenants: deps.tenants }),
    signingCredentialRoutes({ signer: deps.signer }),
    signRoutes({
      blobs: deps.blobs,
      signer: deps.signer,
      signing: deps.signing,
      uploadMaxBytes: deps.uploadMaxBytes,
      uploadSessions: deps.uploadSessions,
    }),
    jobRoutes({ signer: deps.signer, verifier: deps.verifier, publicBaseUrl: deps.publicBaseUrl }),
    verifyRoutes({
      blobs: deps.blobs,
      verifier: deps.verifier,
      verifying: deps.verifying,
      tenants: deps.tenants,
      limiter: deps.limiter,
      uploadMaxBytes: deps.uploadMaxBytes,
      publicVerifyMaxBytes: deps.publicVerifyMaxBytes,
      publicBaseUrl: deps.publicBaseUrl,
      publicVerifyPerMinute: deps.publicVerifyPerMinute,
      uploadSessions: deps.uploadSessions,
    }),
    usageRoutes({ billing: deps.billing }),
    lookupRoutes({
      blobs: deps.blobs,
      softbinding: deps.softbinding,
      billing: deps.billing,
      uploadMaxBytes: deps.uploadMaxBytes,
    }),
    auditRoutes({ audit: deps.audit }),
    anchorRoutes({ anchor: deps.anchor }),
  ];
}

/** The C2PA Soft Binding Resolution API (its store routes keyed), the pages and the docs. */
function publicRoutes(deps: GatewayDeps): Router[] {
  return [
    c2paRepositoryRoutes({
      tenants: deps.tenants,
      limiter: deps.limiter,
      softbinding: deps.softbinding,
      publicBaseUrl: deps.publicBaseUrl,
      manifestMaxBytes: deps.storedManifestMaxBytes,
    }),
    c2paResolutionRoutes({
      blobs: deps.blobs,
      softbinding: deps.softbinding,
      signer: deps.signer,
      watermark: deps.watermark,
      limiter: deps.limiter,
      publicBaseUrl: deps.publicBaseUrl,
      uploadMaxBytes: deps.uploadMaxBytes,
      perMinute: deps.publicResolutionPerMinute,
      outbound: deps.resolutionOutbound,
      referenceTimeoutMs: deps.referenceFetchTimeoutMs,
      referenceMaxBytes: deps.referenceFetchMaxBytes,
      referenceFetchesAtOnce: deps.referenceFetchesAtOnce,
    }),
    pageRoutes({ signer: deps.signer, verifier: deps.verifier, publicBaseUrl: deps.publicBaseUrl }),
    verifyPageRoutes({
      verifier: deps.verifier,
      blobs: deps.blobs,
      limiter: deps.limiter,
      publicBaseUrl: deps.publicBaseUrl,
      docsUrl: deps.docsUrl,
      uploadMaxBytes: deps.uploadMaxBytes,
      publicVerifyMaxBytes: deps.publicVerifyMaxBytes,
      publicVerifyPerMinute: deps.publicVerifyPerMinute,
    }),
    errorDocsRoutes(),
    apiDocsRoutes({
      // The document depends only on the code: built once per app.
      openApiDocument: buildOpenApiDocument({ serverUrl: publicUrl(deps.publicBaseUrl, ''), version: API_VERSION }),
      internalReferenceHtml: internalApiReference,
    }),
  ];
}
