import { fileURLToPath } from 'node:url';
import { webhookV1 } from '@cairn/proto';
import type { ServiceDefinition } from '@cairn/runtime';
import { resolveSecretKey, webhookConfigShape } from './config.js';
import { policyFor } from './domain/address-policy.js';
import { Dispatcher } from './domain/dispatcher.js';
import { Sealer } from '@cairn/sealing';
import { Sender } from './domain/sender.js';
import { FANOUT_CONSUMER, fanOut } from './events.js';
import { webhookHandlers } from './rpc.js';

export const migrationsFolder = fileURLToPath(new URL('./db/migrations', import.meta.url));

export const USER_AGENT = 'Cairn-Webhooks/1.0';

export function webhookService(env: NodeJS.ProcessEnv = process.env): ServiceDefinition<typeof webhookConfigShape> {
  return {
    name: 'webhook',
    configShape: webhookConfigShape,
    migrationsFolder,
    env,
    register: async (ctx) => {
      const { config } = ctx;
      const sealer = new Sealer(resolveSecretKey(config.CAIRN_ENV, config.WEBHOOK_SECRET_KEY), 'WEBHOOK_SECRET_KEY');
      const policy = policyFor(config.CAIRN_ENV);
      const sender = new Sender({ policy, timeoutMs: config.WEBHOOK_TIMEOUT_MS });
      const dispatcher = new Dispatcher(ctx.db, ctx.outbox, sealer, sender, ctx.logger, {
        retryScale: config.WEBHOOK_RETRY_SCALE,
        timeoutMs: config.WEBHOOK_TIMEOUT_MS,
        maxInFlight: config.WEBHOOK_MAX_IN_FLIGHT,
        pollIntervalMs: config.WEBHOOK_POLL_INTERVAL_MS,
        userAgent: `${USER_AGENT} (+${config.DOCS_URL}/webhooks)`,
      });

      ctx.rpc.add(
        webhookV1.WebhookService,
        webhookHandlers({ db: ctx.db, sealer, policy, wake: () => dispatcher.wake() }),
      );
      await ctx.consume(FANOUT_CONSUMER, 'all', async (event, tx) => {
        // The wake-up runs after this transaction commits (the poll loop is the safety net if it runs early).
        if ((await fanOut(event, tx)) > 0) setTimeout(() => dispatcher.wake(), 10).unref();
      });
      dispatcher.start();
      ctx.onShutdown(() => dispatcher.stop());
    },
  };
}
