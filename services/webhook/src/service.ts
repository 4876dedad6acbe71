import { fileURLToPath } from 'node:url';
import { webhookV1 } from '@cairn/proto';
import { defineService } from '@cairn/runtime';
import { resolveSecretKey, webhookConfigShape } from './config.js';
import { Sealer } from '@cairn/sealing';
import { Sender } from './adapters/sender.js';
import { Dispatcher } from './app/dispatcher.js';
import { Endpoints } from './app/endpoints.js';
import { checkEndpointUrl, policyFor } from './adapters/address-policy.js';
import { FANOUT_CONSUMER, FANOUT_TYPES, fanOutHandler } from './events.js';
import { webhookHandlers } from './rpc.js';
import { deliveryStore } from './store/deliveries.js';
import { EndpointStore } from './store/endpoints.js';

export const migrationsFolder = fileURLToPath(new URL('./db/migrations', import.meta.url));

export const USER_AGENT = 'Cairn-Webhooks/1.0';

export const webhookService = defineService('webhook', webhookConfigShape, migrationsFolder, async (ctx) => {
  const { config } = ctx;
  const sealer = new Sealer(resolveSecretKey(config.CAIRN_ENV, config.WEBHOOK_SECRET_KEY), 'WEBHOOK_SECRET_KEY');
  const policy = policyFor(config.CAIRN_ENV);
  const sender = new Sender({ policy, timeoutMs: config.WEBHOOK_TIMEOUT_MS });
  const deliveries = deliveryStore(ctx.db);
  const dispatcher = new Dispatcher(deliveries, ctx.outbox, sealer, sender, ctx.logger, {
    retryScale: config.WEBHOOK_RETRY_SCALE,
    timeoutMs: config.WEBHOOK_TIMEOUT_MS,
    maxInFlight: config.WEBHOOK_MAX_IN_FLIGHT,
    pollIntervalMs: config.WEBHOOK_POLL_INTERVAL_MS,
    idleMaxMs: config.WEBHOOK_IDLE_MAX_MS,
    userAgent: `${USER_AGENT} (+${config.DOCS_URL}/webhooks)`,
  });

  const endpoints = new Endpoints(
    new EndpointStore(ctx.db),
    sealer,
    (raw) => checkEndpointUrl(raw, policy),
    () => dispatcher.wake(),
    ctx.outbox,
  );
  ctx.rpc.add(webhookV1.WebhookService, webhookHandlers(endpoints));
  await ctx.consume(
    FANOUT_CONSUMER,
    FANOUT_TYPES,
    fanOutHandler(deliveries, () => dispatcher.wake()),
  );
  dispatcher.start();
  ctx.onShutdown(() => dispatcher.stop());
});
