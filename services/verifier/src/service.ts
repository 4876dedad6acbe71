import { mediaLimitsOf } from '@cairn/media';
import { fileURLToPath } from 'node:url';
import { createBlobStore } from '@cairn/blob';
import { outboundPolicyOf } from '@cairn/outbound';
import { WorkQueue } from '@cairn/bus';
import type { ClientOf } from '@cairn/rpc';
import { anchorV1, signerV1, softbindingV1, verifierV1, watermarkV1 } from '@cairn/proto';
import { defineService, type ServiceConfig, type ServiceContext } from '@cairn/runtime';
import { anchorsFile, parseTrustSource, PublishedTrustList } from './adapters/trust-sources.js';
import { createManifestReader } from './adapters/c2pa/index.js';
import { TrustLists } from './app/trust-lists.js';
import { ReadingMemo } from './app/verify/reading-memo.js';
import { SignalCache } from './app/verify/signal-cache.js';
import { RedisSignalEpochs } from './adapters/signal-epochs.js';
import { verifierConfigShape } from './config.js';
import { storedVerdict, type StoredVerdictDeps } from './app/stored-verdict.js';
import { NewVerdicts } from './app/new-verdicts.js';
import { VerifyJobs, type VerifyJobItem } from './app/verify-jobs.js';
import { VerifyJobStore } from './store/jobs.js';
import { RESULTS_CONSUMER, RESULTS_EVENT_TYPES, verifierResultEvents } from './events.js';
import { verifierHandlers } from './rpc.js';
import { ResultStore } from './store/results.js';
import { TrustListStore } from './store/trust.js';

/** New assets' verdicts waiting for a pause in signing, at most; past it the oldest are computed at once. */
const NEW_VERDICTS_MAX_PENDING = 256;

export const migrationsFolder = fileURLToPath(new URL('./db/migrations', import.meta.url));
/** The C2PA trust lists shipped with the verifier (data; see trust-lists/README.md). */
const C2PA_TRUST_LIST_FILE = new URL('./trust-lists/C2PA-TRUST-LIST.pem', import.meta.url);
const C2PA_TSA_TRUST_LIST_FILE = new URL('./trust-lists/C2PA-TSA-TRUST-LIST.pem', import.meta.url);
const INTERIM_TRUST_LIST_FILE = new URL('./trust-lists/INTERIM-TRUST-LIST.pem', import.meta.url);
/** What each shipped copy is: its PEM bundle carries no header (the dates are in trust-lists/README.md). */
const SHIPPED_LISTS = {
  c2pa: { name: 'C2PA Trust List', issuedAt: '2026-08-05T00:11:39.000Z', nextUpdate: '2027-08-05T00:11:39.000Z' },
  tsa: { name: 'C2PA TSA Trust List', issuedAt: '2026-08-05T00:11:47.000Z', nextUpdate: '2027-08-05T00:11:47.000Z' },
  interim: { name: 'Interim Trust List (frozen)', issuedAt: '2025-08-28T17:49:44.000Z' },
} as const;

export const verifierService = defineService('verifier', verifierConfigShape, migrationsFolder, async (ctx, env) => {
  const { config } = ctx;
  const blobs = createBlobStore(config.BLOB_STORE_URL, env);
  await blobs.ping();
  const reader = createManifestReader({ size: config.C2PA_READERS, timeoutMs: config.C2PA_READ_TIMEOUT_MS });
  await reader.ready();
  ctx.onShutdown(() => reader.close());
  const signer = ctx.client(signerV1.SignerService, 'signer');
  const outboundPolicy = verifierOutboundPolicy(config);
  const trust = trustLists(ctx, signer, outboundPolicy);
  const results = new ResultStore(ctx.db);
  // The ports' implementations (app/ports.ts), with their full types: the RPC handlers use more of them.
  const deps = {
    db: ctx.db,
    blobs,
    reader,
    readings: new ReadingMemo(config.C2PA_READING_MEMO_MIB * 1024 * 1024, config.VERIFY_RESULT_FRESH_SECONDS * 1000),
    signals: new SignalCache(config.VERIFY_SIGNAL_CACHE_MIB * 1024 * 1024, config.VERIFY_SIGNAL_CACHE_SECONDS * 1000),
    signalEpochs: new RedisSignalEpochs(ctx.redis),
    signer,
    watermark: ctx.client(watermarkV1.WatermarkService, 'watermark'),
    softbinding: ctx.client(softbindingV1.SoftBindingService, 'softbinding'),
    anchor: ctx.client(anchorV1.AnchorService, 'anchor'),
    trust,
    results,
    outbox: ctx.outbox,
    logger: ctx.logger,
    publicBaseUrl: config.PUBLIC_BASE_URL,
    ocspTimeoutMs: config.OCSP_TIMEOUT_MS,
    outboundPolicy,
    mediaLimits: mediaLimitsOf(config),
    freshForMs: config.VERIFY_RESULT_FRESH_SECONDS * 1000,
  } satisfies StoredVerdictDeps;
  const jobs = new VerifyJobStore(ctx.db);
  const queue = await WorkQueue.open<VerifyJobItem>(ctx.bus, 'verify');
  const verifyJobs = new VerifyJobs({ ...deps, jobs }, queue, ctx.logger);
  ctx.rpc.add(verifierV1.VerifierService, verifierHandlers({ ...deps, verifyJobs }));
  const worker = await queue.consume({
    durable: 'verifier-jobs',
    // One delivery more than the attempts: the last one only records the failure (JobRunner, @cairn/runtime).
    maxAttempts: config.VERIFY_JOB_MAX_ATTEMPTS + 1,
    ackWaitMs: 120_000,
    logger: ctx.logger,
    handler: (item, job) => verifyJobs.run(item, job.attempt, config.VERIFY_JOB_MAX_ATTEMPTS),
  });
  ctx.onShutdown(() => worker.stop(config.SHUTDOWN_GRACE_MS));
  // 0 (the default): each new asset's verdict is computed as its event is handled, as before this setting.
  let newVerdicts: NewVerdicts | undefined;
  if (config.VERIFY_NEW_VERDICT_QUIET_MS > 0) {
    const queue = new NewVerdicts(
      async (manifestId) => void (await storedVerdict(deps, manifestId, { background: true })),
      { quietMs: config.VERIFY_NEW_VERDICT_QUIET_MS, maxPending: NEW_VERDICTS_MAX_PENDING, logger: ctx.logger },
    );
    ctx.onShutdown(() => queue.close());
    newVerdicts = queue;
  }
  await ctx.consume(RESULTS_CONSUMER, RESULTS_EVENT_TYPES, verifierResultEvents(deps, newVerdicts));
});

type VerifierContext = ServiceContext<typeof verifierConfigShape>;

/** OCSP responders answer over plain http (RFC 6960 A.1), so only the trust lists take https-only (trustLists). */
function verifierOutboundPolicy(config: ServiceConfig<typeof verifierConfigShape>) {
  return {
    ...outboundPolicyOf(config),
    httpsOnly: false,
  };
}

/** The trust lists in force: the published C2PA, TSA and interim lists (shipped copies first), and Cairn's roots. */
function trustLists(
  ctx: VerifierContext,
  signer: ClientOf<typeof signerV1.SignerService>,
  outboundPolicy: ReturnType<typeof verifierOutboundPolicy>,
): TrustLists {
  const { config } = ctx;
  const published = (setting: string, builtin: URL, shipped: (typeof SHIPPED_LISTS)[keyof typeof SHIPPED_LISTS]) =>
    new PublishedTrustList(parseTrustSource(setting, builtin), {
      builtin,
      shipped,
      refreshMs: config.TRUST_LIST_REFRESH_SECONDS * 1000,
      policy: { ...outboundPolicy, httpsOnly: config.CAIRN_ENV === 'production' },
      logger: ctx.logger,
    });
  return new TrustLists(
    new TrustListStore(ctx.db),
    async () => (await signer.getTrustAnchors({})).rootPem,
    {
      c2pa: published(config.C2PA_TRUST_LIST, C2PA_TRUST_LIST_FILE, SHIPPED_LISTS.c2pa),
      tsa: published(config.C2PA_TSA_TRUST_LIST, C2PA_TSA_TRUST_LIST_FILE, SHIPPED_LISTS.tsa),
      interim: published(config.C2PA_INTERIM_TRUST_LIST, INTERIM_TRUST_LIST_FILE, SHIPPED_LISTS.interim),
    },
    anchorsFile(config.TRUST_ANCHORS_FILE),
    ctx.outbox,
  );
}
