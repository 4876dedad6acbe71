import { fileURLToPath } from 'node:url';
import { createBlobStore } from '@cairn/blob';
import { anchorV1, signerV1, softbindingV1, verifierV1, watermarkV1 } from '@cairn/proto';
import type { ServiceDefinition } from '@cairn/runtime';
import { createManifestReader } from './c2pa/index.js';
import { verifierConfigShape } from './config.js';
import type { StoredVerdictDeps } from './app/stored-verdict.js';
import { RESULTS_CONSUMER, verifierResultEvents } from './events.js';
import { verifierHandlers } from './rpc.js';
import { ResultStore } from './store/results.js';
import { TrustLists } from './store/trust.js';

export const migrationsFolder = fileURLToPath(new URL('./db/migrations', import.meta.url));

export function verifierService(env: NodeJS.ProcessEnv = process.env): ServiceDefinition<typeof verifierConfigShape> {
  return {
    name: 'verifier',
    configShape: verifierConfigShape,
    migrationsFolder,
    env,
    register: async (ctx) => {
      const { config } = ctx;
      const blobs = createBlobStore(config.BLOB_STORE_URL, env);
      await blobs.ping();
      const reader = createManifestReader({ size: config.C2PA_READERS, timeoutMs: config.C2PA_READ_TIMEOUT_MS });
      await reader.ready();
      ctx.onShutdown(() => reader.close());
      const signer = ctx.client(signerV1.SignerService, 'signer');
      const trust = new TrustLists(ctx.db, async () => (await signer.getTrustAnchors({})).rootPem, config.TRUST_ANCHORS_FILE);
      const results = new ResultStore(ctx.db);
      const allowLoopback = config.OUTBOUND_ALLOW_LOOPBACK ? config.OUTBOUND_ALLOW_LOOPBACK === 'true' : config.CAIRN_ENV !== 'production';
      const deps: StoredVerdictDeps = {
        db: ctx.db,
        blobs,
        reader,
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
        outboundPolicy: { httpsOnly: false, blockInternal: true, allowLoopback },
        freshForMs: config.VERIFY_RESULT_FRESH_SECONDS * 1000,
      };
      ctx.rpc.add(verifierV1.VerifierService, verifierHandlers(deps));
      await ctx.consume(RESULTS_CONSUMER, ['asset.signed', 'anchor.confirmed', 'certificate.revoked'], verifierResultEvents(deps));
    },
  };
}
