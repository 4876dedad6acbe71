import { mediaLimitsOf } from '@cairn/media';
import { fileURLToPath } from 'node:url';
import { Histogram } from 'prom-client';
import { blobKeys, createBlobStore, type BlobStore } from '@cairn/blob';
import { WorkQueue } from '@cairn/bus';
import { outboundPolicyOf } from '@cairn/outbound';
import { Sealer } from '@cairn/sealing';
import { Assets } from './app/assets.js';
import { cairnIdentity, Credentials } from './app/credentials.js';
import { CredentialStore } from './store/credentials.js';
import { anchorV1, signerV1, watermarkV1 } from '@cairn/proto';
import { defineService, every, type ServiceContext } from '@cairn/runtime';
import { pkiSettingsFromConfig, signerConfigShape } from './config.js';
import { IsolatedC2pa } from './adapters/c2pa/isolated.js';
import { KeyMaterial } from './adapters/key-material.js';
import { createOcspHandler, startOcspServer } from './adapters/ocsp-responder.js';
import { remoteKeyBackend } from './adapters/remote-signer.js';
import { createTsaHandler, localTsaUrl } from './adapters/tsa-responder.js';
import type { PipelineDeps } from './app/sign/index.js';
import { SignJobs, type SignJobItem } from './app/jobs.js';
import { CertificateAuthority } from './app/pki/certificate-authority.js';
import { signerHandlers } from './rpc.js';
import { AssetStore } from './store/assets.js';
import { CertificateStore } from './store/certificates.js';
import { SignJobStore } from './store/jobs.js';

export const migrationsFolder = fileURLToPath(new URL('./db/migrations', import.meta.url));
const VERSION = '0.1.0';

export const signerService = defineService('signer', signerConfigShape, migrationsFolder, async (ctx, env) => {
  const { config, logger } = ctx;
  const blobs = createBlobStore(config.BLOB_STORE_URL, env);
  await blobs.ping();
  const pki = pkiSettingsFromConfig(config);
  const authority = new CertificateAuthority({
    store: new CertificateStore(ctx.db),
    keys: new KeyMaterial(pki),
    settings: pki,
    logger,
  });
  await authority.ensureDevelopmentPki();

  const tsaUrl = await startResponders(ctx, authority, pki.tsaUrl);

  const store = new AssetStore(ctx.db);
  const c2pa = new IsolatedC2pa({
    size: config.SIGN_WORKERS,
    timeoutMs: config.SIGN_WORKER_TIMEOUT_MS,
    maxOldSpaceMb: config.SIGN_WORKER_MAX_OLD_SPACE_MB,
  });
  ctx.onShutdown(() => c2pa.close());
  // Children started before the service reports ready, so the first sign's budget is not spent on process start.
  await c2pa.pool.ready();
  const credentials = new Credentials({
    store: new CredentialStore(ctx.db),
    remoteKey: remoteKeyBackend,
    // The KEK that seals the CA's keys also seals the BYOK endpoints' HMAC secrets (bound to their rows).
    sealer: new Sealer(pki.kek.toString('hex'), 'SIGNER_KEK'),
    policy: outboundPolicyOf(config),
    timeoutMs: config.BYOK_SIGN_TIMEOUT_MS,
    cairnIdentity: () => cairnIdentity(authority, pki.org),
    outbox: ctx.outbox,
  });
  const deps: PipelineDeps = {
    db: ctx.db,
    blobs,
    outbox: ctx.outbox,
    store,
    authority,
    credentials,
    watermark: ctx.client(watermarkV1.WatermarkService, 'watermark'),
    anchor: ctx.client(anchorV1.AnchorService, 'anchor'),
    logger,
    c2pa,
    publicBaseUrl: config.PUBLIC_BASE_URL,
    tsaUrl,
    assetClaimLeaseSeconds: config.ASSET_CLAIM_LEASE_SECONDS,
    mediaLimits: mediaLimitsOf(config),
    watermarkWaitMs: config.SIGN_JOB_WATERMARK_WAIT_MS,
    version: VERSION,
    observeStage: signStageMetric(ctx),
  };
  const queue = await WorkQueue.open<SignJobItem>(ctx.bus, 'sign');
  const jobs = new SignJobs({ ...deps, jobs: new SignJobStore(ctx.db) }, queue, logger);
  ctx.rpc.add(
    signerV1.SignerService,
    signerHandlers({ ...deps, assets: new Assets(store, blobs, mediaLimitsOf(config)), jobs, credentials }),
  );

  const worker = await queue.consume({
    durable: 'signer-jobs',
    // One delivery more than the job's attempts: the last one only records the failure (JobRunner, @cairn/runtime).
    maxAttempts: config.SIGN_JOB_MAX_ATTEMPTS + 1,
    ackWaitMs: 120_000,
    logger,
    handler: (item, job) => jobs.run(item, job.attempt, config.SIGN_JOB_MAX_ATTEMPTS),
  });
  ctx.onShutdown(() => worker.stop(config.SHUTDOWN_GRACE_MS));

  startChores(ctx, authority, store, blobs);
});

type SignerContext = ServiceContext<typeof signerConfigShape>;

/**
 * The CA's public responders on one listener: the time-stamping authority at TSA_PUBLIC_URL's path, the OCSP
 * responder at the rest. Answers the TSA URL signs use (the configured one, else this listener's).
 */
async function startResponders(
  ctx: SignerContext,
  authority: CertificateAuthority,
  configuredTsaUrl: string | undefined,
): Promise<string> {
  const { config, logger } = ctx;
  const tsaDeps = authority.tsaResponderDeps({ onError: (error) => logger.error({ err: error }, 'TSA error') });
  const ocspHost = config.OCSP_HOST ?? config.GRPC_HOST;
  const ocsp = await startOcspServer(
    createTsaHandler(
      tsaDeps,
      createOcspHandler(
        authority.ocspResponderDeps({ onError: (error) => logger.error({ err: error }, 'OCSP responder error') }),
      ),
    ),
    ocspHost,
    config.OCSP_PORT,
  );
  ctx.expose('ocsp', ocsp.port);
  ctx.onShutdown(() => ocsp.close());
  return configuredTsaUrl ?? localTsaUrl(ocspHost, ocsp.port, tsaDeps.ownPath ?? tsaDeps.basePath ?? '/tsa');
}

/** The periodic chores: certificate rotation and expiry notices, and deleting derived assets past retention. */
function startChores(ctx: SignerContext, authority: CertificateAuthority, store: AssetStore, blobs: BlobStore): void {
  const { config, logger } = ctx;
  const onError = (what: string) => (error: unknown) => logger.error({ err: error }, `${what} failed`);
  const stopPki = every(
    config.PKI_CHECK_INTERVAL_MS,
    async () => {
      await authority.rotateIfDue();
      if ((await authority.notifyExpiring(new Date(), (tx, event) => ctx.outbox.enqueue(tx, event))) > 0)
        await ctx.outbox.flush();
    },
    onError('certificate check'),
  );
  const stopSweep = every(
    config.ASSET_SWEEP_INTERVAL_MS,
    async () => {
      const removed = await store.claimExpired(200, async (row) => {
        // The page thumbnail too, if one was made (app/thumbnails.ts).
        await blobs.delete(blobKeys.thumbnail(row.tenantId, row.assetId));
        if (row.blobKey) await blobs.delete(row.blobKey);
      });
      if (removed > 0) logger.info({ removed }, 'deleted derived assets past their retention');
    },
    onError('asset retention sweep'),
  );
  ctx.onShutdown(stopPki);
  ctx.onShutdown(stopSweep);
}

/** cairn_sign_stage_seconds: how long each stage of a sign takes. */
function signStageMetric(ctx: SignerContext): PipelineDeps['observeStage'] {
  const stageSeconds = new Histogram({
    name: 'cairn_sign_stage_seconds',
    help: 'Time spent in each stage of a sign',
    labelNames: ['stage'],
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    registers: [ctx.metrics.registry],
  });
  return (stage, seconds) => stageSeconds.observe({ stage }, seconds);
}
