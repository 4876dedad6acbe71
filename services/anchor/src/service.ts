import { fileURLToPath } from 'node:url';
import type { Hex } from 'viem';
import { anchorV1 } from '@cairn/proto';
import { Backoff, wakeableLoop, defineService } from '@cairn/runtime';
import { anchorConfigShape, DEV_PRIVATE_KEY } from './config.js';
import { createChainWriter } from './adapters/chain.js';
import { Anchorer } from './app/anchorer.js';
import { Batches } from './app/batches.js';
import { AnchorChecker } from './app/check.js';
import { ANCHOR_SIGNED_CONSUMER, ANCHOR_SIGNED_TYPES, enqueueSigned } from './events.js';
import { anchorHandlers } from './rpc.js';
import { BatchStore } from './store/batches.js';

export const migrationsFolder = fileURLToPath(new URL('./db/migrations', import.meta.url));

export const anchorService = defineService('anchor', anchorConfigShape, migrationsFolder, async (ctx) => {
  const { config, logger } = ctx;
  if (config.CAIRN_ENV === 'production' && config.ANCHOR_PRIVATE_KEY.toLowerCase() === DEV_PRIVATE_KEY) {
    throw new Error(
      'ANCHOR_PRIVATE_KEY is the public hardhat development key: set the anchoring account’s own key in production',
    );
  }
  const chain = createChainWriter(config.ANCHOR_RPC_URL, config.ANCHOR_PRIVATE_KEY as Hex);
  // Known once the node has answered; the service starts (and takes enqueues) while the chain is down.
  let chainId: number | undefined;
  void chain.chainId().then(
    (id) => (chainId = id),
    () => undefined,
  );
  // Reads for the verifier's check get a short budget of their own: a verify waits on them.
  const reader = createChainWriter(
    config.ANCHOR_RPC_URL,
    config.ANCHOR_PRIVATE_KEY as Hex,
    config.ANCHOR_CHECK_TIMEOUT_MS,
  );
  const store = new BatchStore(ctx.db, ctx.pool);
  const anchorer = new Anchorer({
    store,
    chain,
    logger,
    confirmations: config.ANCHOR_CONFIRMATIONS,
    batchMaxAgeMs: config.ANCHOR_BATCH_MAX_AGE_MS,
    retryMaxMs: config.ANCHOR_RETRY_MAX_MS,
    pollMs: config.ANCHOR_POLL_MS,
    idle: new Backoff(config.ANCHOR_POLL_MS, Math.max(config.ANCHOR_POLL_MS, config.ANCHOR_IDLE_MAX_MS)),
    enqueueEvent: (tx, event) => ctx.outbox.enqueue(tx, event),
    onAnchored: () => void ctx.outbox.flush(),
  });
  logger.info(
    {
      rpc_url: config.ANCHOR_RPC_URL,
      from: chain.address,
      batch_max: config.ANCHOR_BATCH_MAX,
      batch_max_age_ms: config.ANCHOR_BATCH_MAX_AGE_MS,
      confirmations: config.ANCHOR_CONFIRMATIONS,
    },
    'anchoring to chain',
  );
  const loop = wakeableLoop(
    () => anchorer.pass(),
    (error) => logger.error({ err: error }, 'anchor tick failed'),
    config.ANCHOR_POLL_MS,
  );
  ctx.onShutdown(() => loop.stop());
  // A full batch is sealed and sent at once; otherwise the open batch is due to close within its max age.
  const batches = new Batches(store, config.ANCHOR_BATCH_MAX, (filled) =>
    loop.wake(filled ? 0 : config.ANCHOR_BATCH_MAX_AGE_MS),
  );
  const checker = new AnchorChecker(store, reader);
  ctx.rpc.add(anchorV1.AnchorService, anchorHandlers({ batches, chainId: () => chainId, checker }));
  await ctx.consume(ANCHOR_SIGNED_CONSUMER, ANCHOR_SIGNED_TYPES, enqueueSigned(batches));
});
