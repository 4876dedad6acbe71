import { fileURLToPath } from 'node:url';
import { createBlobStore } from '@cairn/blob';
import { mediaLimitsOf } from '@cairn/media';
import { signerV1, softbindingV1 } from '@cairn/proto';
import { Backoff, wakeableLoop, defineService } from '@cairn/runtime';
import { softbindingConfigShape } from './config.js';
import { fingerprinters } from './adapters/fingerprinters.js';
import { INDEX_CONSUMER, INDEX_TYPES, indexHandler } from './events.js';
import { softbindingHandlers } from './rpc.js';
import { AudioIndex, TextIndex } from './store/feature-index.js';
import { FingerprintIndex } from './store/fingerprints.js';
import { lookupRecorder } from './store/lookup-events.js';
import { ManifestRepository } from './store/repository.js';
import { signerReceipts } from './adapters/receipt-signing.js';

export const migrationsFolder = fileURLToPath(new URL('./db/migrations', import.meta.url));

export const softbindingService = defineService(
  'softbinding',
  softbindingConfigShape,
  migrationsFolder,
  async (ctx, env) => {
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
    // Served at once: until the in-memory index holds every row (a million take seconds), lookups search the
    // Postgres multi-index, which gives the same answers more slowly. A failed load is retried by the catch-up.
    const started = Date.now();
    images.load().then(
      () => ctx.logger.info({ rows: images.heldRows, ms: Date.now() - started }, 'fingerprints held in memory'),
      (error: unknown) => ctx.logger.warn({ err: error }, 'fingerprint load failed; lookups use Postgres meanwhile'),
    );
    // Rows another replica indexed reach this one's memory by the catch-up: every FINGERPRINT_CATCH_UP_MS while
    // rows arrive (read here or indexed here), backing off to FINGERPRINT_CATCH_UP_MAX_MS while none do.
    const catchUpBackoff = new Backoff(
      ctx.config.FINGERPRINT_CATCH_UP_MS,
      Math.max(ctx.config.FINGERPRINT_CATCH_UP_MS, ctx.config.FINGERPRINT_CATCH_UP_MAX_MS),
    );
    let held = images.heldRows;
    const catchUp = wakeableLoop(
      async () => {
        if (images.busy) return catchUpBackoff.baseMs;
        await images.catchUp();
        const changed = images.heldRows !== held;
        held = images.heldRows;
        return catchUpBackoff.next(changed);
      },
      (error) => ctx.logger.warn({ err: error }, 'fingerprint catch-up failed'),
      ctx.config.FINGERPRINT_CATCH_UP_MS,
    );
    ctx.onShutdown(async () => {
      await catchUp.stop();
      await images.close();
    });
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
        fingerprints: fingerprinters,
        maxResults: ctx.config.LOOKUP_MAX_RESULTS,
        mediaLimits: mediaLimitsOf(ctx.config),
        recordLookup: lookupRecorder(ctx.db, ctx.outbox),
        repository: new ManifestRepository(ctx.db),
        receipts: signerReceipts(ctx.client(signerV1.SignerService, 'signer')),
        maxManifestBytes: ctx.config.STORED_MANIFEST_MAX_BYTES,
        maxManifestsPerTenant: ctx.config.STORED_MANIFESTS_MAX_PER_TENANT,
      }),
    );
    await ctx.consume(
      INDEX_CONSUMER,
      INDEX_TYPES,
      indexHandler({
        blobs,
        indexes,
        fingerprints: fingerprinters,
        logger: ctx.logger,
        mediaLimits: mediaLimitsOf(ctx.config),
      }),
    );
  },
);
