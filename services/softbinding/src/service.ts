import { fileURLToPath } from 'node:url';
import { createBlobStore } from '@cairn/blob';
import { mediaLimitsOf } from '@cairn/media';
import { softbindingV1 } from '@cairn/proto';
import type { ServiceDefinition } from '@cairn/runtime';
import { softbindingConfigShape } from './config.js';
import { INDEX_CONSUMER, INDEX_TYPES, indexHandler } from './events.js';
import { softbindingHandlers } from './rpc.js';
import { AudioIndex, TextIndex } from './store/feature-index.js';
import { FingerprintIndex } from './store/fingerprints.js';
import { lookupRecorder } from './store/lookup-events.js';

export const migrationsFolder = fileURLToPath(new URL('./db/migrations', import.meta.url));

export function softbindingService(
  env: NodeJS.ProcessEnv = process.env,
): ServiceDefinition<typeof softbindingConfigShape> {
  return {
    name: 'softbinding',
    configShape: softbindingConfigShape,
    migrationsFolder,
    env,
    register: async (ctx) => {
      const blobs = createBlobStore(ctx.config.BLOB_STORE_URL, env);
      await blobs.ping();
      const images = new FingerprintIndex(
        ctx.db,
        ctx.config.FINGERPRINT_MEMORY_MAX_ROWS > 0
          ? {
              maxSlots: ctx.config.FINGERPRINT_MEMORY_MAX_ROWS,
              maxSlotsPerTenant: ctx.config.FINGERPRINT_MEMORY_MAX_ROWS_PER_TENANT,
            }
          : undefined,
      );
      await images.load();
      ctx.logger.info({ rows: images.heldRows }, 'fingerprints held in memory');
      const catchUp = setInterval(() => {
        images.catchUp().catch((error: unknown) => ctx.logger.warn({ err: error }, 'fingerprint catch-up failed'));
      }, ctx.config.FINGERPRINT_CATCH_UP_MS);
      ctx.onShutdown(async () => clearInterval(catchUp));
      const indexes = {
        images,
        audio: new AudioIndex(ctx.db),
        text: new TextIndex(ctx.db),
      };
      ctx.rpc.add(
        softbindingV1.SoftBindingService,
        softbindingHandlers({
          blobs,
          indexes,
          maxResults: ctx.config.LOOKUP_MAX_RESULTS,
          mediaLimits: mediaLimitsOf(ctx.config),
          recordLookup: lookupRecorder(ctx.db, ctx.outbox),
        }),
      );
      await ctx.consume(
        INDEX_CONSUMER,
        INDEX_TYPES,
        indexHandler({
          blobs,
          indexes,
          logger: ctx.logger,
          mediaLimits: mediaLimitsOf(ctx.config),
        }),
      );
    },
  };
}
