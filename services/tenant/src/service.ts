import { fileURLToPath } from 'node:url';
import { tenantV1 } from '@cairn/proto';
import { every, defineService } from '@cairn/runtime';
import { Sealer } from '@cairn/sealing';
import { createPaymentProcessor } from './adapters/payments.js';
import { TenantDirectory } from './app/directory.js';
import { resolveDataKey, tenantConfigShape } from './config.js';
import { tenantService as tenantRpc } from './rpc.js';
import { startKeyExpirySweep } from './store/key-expiry.js';
import { RecipeCatalog } from './store/recipes.js';
import { TenantStore } from './store/tenants.js';

export const migrationsFolder = fileURLToPath(new URL('./db/migrations', import.meta.url));

export const tenantService = defineService('tenant', tenantConfigShape, migrationsFolder, async (ctx) => {
  const { config } = ctx;
  const sealer = new Sealer(resolveDataKey(config.CAIRN_ENV, config.CAIRN_DATA_KEY), 'CAIRN_DATA_KEY');
  const store = new TenantStore(ctx.db, ctx.outbox, sealer, config.ONBOARD_REPLAY_TTL_SECONDS);
  const recipes = new RecipeCatalog(ctx.db);
  await recipes.seed();
  const directory = new TenantDirectory({ store, recipes, payments: createPaymentProcessor(config) });
  ctx.rpc.add(tenantV1.TenantService, tenantRpc(directory));
  ctx.onShutdown(startKeyExpirySweep(ctx.db, ctx.outbox, ctx.logger, config.KEY_EXPIRY_SWEEP_INTERVAL_MS));
  ctx.onShutdown(
    every(
      config.ONBOARD_REPLAY_SWEEP_INTERVAL_MS,
      async () => {
        const dropped = await store.dropExpiredOnboardingAnswers();
        if (dropped > 0) ctx.logger.info({ dropped }, 'sealed onboarding answers past the replay window dropped');
      },
      (error) => ctx.logger.warn({ err: error }, 'onboarding replay sweep failed; will retry'),
    ),
  );
});
