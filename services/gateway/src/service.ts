import { fileURLToPath } from 'node:url';
import { createServer } from 'node:http';
import { createBlobStore, type BlobStore } from '@cairn/blob';
import { publicUrl } from '@cairn/config';
import { outboundPolicyOf } from '@cairn/outbound';
import {
  anchorV1,
  auditV1,
  billingV1,
  signerV1,
  tenantV1,
  softbindingV1,
  verifierV1,
  watermarkV1,
  webhookV1,
} from '@cairn/proto';
import { closeServer, listen, defineService, type ServiceContext } from '@cairn/runtime';
import { gatewayConfigShape, resolveDataKey } from './config.js';
import { RedisRateLimiter } from './adapters/rate-limit.js';
import { AuthFailureLimit } from './adapters/auth-failures.js';
import { RedisConcurrencyLimiter } from './adapters/concurrency-limit.js';
import type { Logger } from '@cairn/logging';
import { createApp } from './http/app.js';
import { TenantDirectory } from './adapters/tenant-directory.js';
import { SignRequestStore } from './store/sign-requests.js';
import { UploadSessionStore } from './store/upload-sessions.js';
import { UploadSessions } from './app/upload-sessions.js';
import { SignAssets } from './app/sign.js';
import { VerifyFiles } from './app/verify.js';
import { UploadUrlSigner } from './domain/upload-url.js';

export const migrationsFolder = fileURLToPath(new URL('./db/migrations', import.meta.url));

export const gatewayService = defineService('gateway', gatewayConfigShape, migrationsFolder, async (ctx, env) => {
  const { config } = ctx;
  const tenants = new TenantDirectory(ctx.client(tenantV1.TenantService, 'tenant'), {
    ttlMs: config.AUTH_CACHE_TTL_MS,
    maxEntries: config.AUTH_CACHE_MAX_ENTRIES,
  });
  const blobs = createBlobStore(config.BLOB_STORE_URL, env);
  await blobs.ping();

  const uploadSessions = uploadSessionsOf(ctx, blobs);

  const redisDown = throttledWarning(
    ctx.logger,
    'Redis unreachable: rate limits kept in this process until it answers again',
  );
  const signer = ctx.client(signerV1.SignerService, 'signer');
  const billing = ctx.client(billingV1.BillingService, 'billing');
  const verifier = ctx.client(verifierV1.VerifierService, 'verifier');
  const verifying = new VerifyFiles({ blobs, verifier, billing, syncVerifyMaxBytes: config.SYNC_VERIFY_MAX_BYTES });
  const signing = new SignAssets({
    signer,
    tenants,
    requests: new SignRequestStore(ctx.db, config.SIGN_CLAIM_LEASE_SECONDS),
    // A slot lapses with the sign's idempotency lease: both outlive the sign's deadline, so only a dead gateway's lapse.
    slots: new RedisConcurrencyLimiter(ctx.redis, 'signs-in-flight:', config.SIGN_CLAIM_LEASE_SECONDS * 1000, {
      onFallback: redisDown,
    }),
    concurrencyPerTenant: config.SIGN_CONCURRENCY_PER_TENANT,
    billing,
    publicBaseUrl: config.PUBLIC_BASE_URL,
    syncMaxBytes: config.SYNC_SIGN_MAX_BYTES,
    logger: ctx.logger,
  });
  const app = createApp({
    logger: ctx.logger,
    metrics: ctx.metrics,
    tenants,
    limiter: new RedisRateLimiter(ctx.redis, 'ratelimit:', { onFallback: redisDown }),
    authFailures: new AuthFailureLimit(
      ctx.redis,
      'auth-failures:',
      { limit: config.AUTH_FAILURES_PER_MINUTE, windowSeconds: 60 },
      { onFallback: redisDown },
    ),
    // Unset, problem `type` URLs point at the gateway's own error catalogue (/docs/api/errors), so they resolve.
    docsUrl: env.DOCS_URL ? config.DOCS_URL : publicUrl(config.PUBLIC_BASE_URL, '/docs'),
    trustProxy: config.TRUST_PROXY,
    onboardPerMinute: config.ONBOARD_RATE_LIMIT_PER_MINUTE,
    blobs,
    signer,
    verifier,
    signing,
    publicBaseUrl: config.PUBLIC_BASE_URL,
    uploadMaxBytes: config.UPLOAD_MAX_BYTES,
    requestDeadlineMs: config.REQUEST_TIMEOUT_MS,
    uploadDeadline: {
      maxSessionBytes: config.UPLOAD_SESSION_MAX_BYTES,
      minBytesPerSecond: config.UPLOAD_MIN_BYTES_PER_SECOND,
    },
    publicVerifyPerMinute: config.PUBLIC_VERIFY_PER_MINUTE,
    verifying,
    publicVerifyMaxBytes: config.PUBLIC_VERIFY_MAX_BYTES,
    webhooks: ctx.client(webhookV1.WebhookService, 'webhook'),
    billing,
    audit: ctx.client(auditV1.AuditService, 'audit'),
    anchor: ctx.client(anchorV1.AnchorService, 'anchor'),
    softbinding: ctx.client(softbindingV1.SoftBindingService, 'softbinding'),
    watermark: ctx.client(watermarkV1.WatermarkService, 'watermark'),
    publicResolutionPerMinute: config.PUBLIC_RESOLUTION_PER_MINUTE,
    resolutionOutbound: outboundPolicyOf(config),
    referenceFetchTimeoutMs: config.REFERENCE_FETCH_TIMEOUT_MS,
    referenceFetchMaxBytes: Math.min(config.REFERENCE_FETCH_MAX_BYTES, config.UPLOAD_MAX_BYTES),
    referenceFetchesAtOnce: config.REFERENCE_FETCHES_AT_ONCE,
    storedManifestMaxBytes: config.STORED_MANIFEST_MAX_BYTES,
    uploadSessions,
  });
  await serveHttp(ctx, app);
  ctx.onShutdown(uploadSessions.startSweep(config.UPLOAD_SESSION_SWEEP_INTERVAL_MS));
});

/** At most one warning a minute for a failure that repeats on every request, counted meanwhile. */
function throttledWarning(logger: Logger, message: string): (error: unknown) => void {
  let last = 0;
  let suppressed = 0;
  return (error) => {
    const now = Date.now();
    if (now - last < 60_000) {
      suppressed += 1;
      return;
    }
    logger.warn({ err: error, since_last_warning: suppressed }, message);
    last = now;
    suppressed = 0;
  };
}

type GatewayContext = ServiceContext<typeof gatewayConfigShape>;

/** Resumable uploads: sessions in the gateway's schema, chunks in the blob store, URLs signed with the data key. */
function uploadSessionsOf(ctx: GatewayContext, blobs: BlobStore): UploadSessions {
  const { config } = ctx;
  return new UploadSessions({
    store: new UploadSessionStore(ctx.db),
    blobs,
    urls: new UploadUrlSigner(resolveDataKey(config.CAIRN_ENV, config.CAIRN_DATA_KEY)),
    publicBaseUrl: config.PUBLIC_BASE_URL,
    maxBytes: config.UPLOAD_SESSION_MAX_BYTES,
    directMaxBytes: config.UPLOAD_MAX_BYTES,
    minFreeBytes: config.UPLOAD_MIN_FREE_BYTES,
    ttlSeconds: config.UPLOAD_SESSION_TTL_SECONDS,
    logger: ctx.logger,
  });
}

/** The public HTTP listener; each request's body deadline is the app's (http/request-deadline.ts). */
async function serveHttp(ctx: GatewayContext, app: Parameters<typeof createServer>[1]): Promise<void> {
  const { config } = ctx;
  const server = createServer(app);
  // An upload PUT's deadline follows its size, so Node's own whole-request timeout is off.
  server.requestTimeout = 0;
  server.headersTimeout = 30_000;
  server.keepAliveTimeout = config.HTTP_KEEP_ALIVE_TIMEOUT_MS;
  const port = await listen(server, config.HTTP_HOST ?? config.GRPC_HOST, config.HTTP_PORT);
  ctx.expose('http', port);
  ctx.onShutdown(() => closeServer(server, config.SHUTDOWN_GRACE_MS));
}
