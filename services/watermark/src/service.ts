import { fileURLToPath } from 'node:url';
import { mediaLimitsOf } from '@cairn/media';
import { watermarkV1 } from '@cairn/proto';
import { defineService } from '@cairn/runtime';
import { watermarkConfigShape } from './config.js';
import { DetectionMemo } from './app/detection-memo.js';
import { resolveKeyring } from './app/keyring.js';
import { CAIRN_DCT_V1 } from './domain/image/cairn-dct-v1.js';
import { mediaCodecs } from './adapters/media-codecs.js';
import { ImageWorkerPool } from './adapters/worker-pool.js';
import { poolSizeFromCgroup } from './adapters/cpu-limit.js';
import { watermarkHandlers } from './rpc.js';
import { GeneratedKeyStore } from './store/generated-keys.js';
import { MarkRegistry } from './store/marks.js';

export const migrationsFolder = fileURLToPath(new URL('./db/migrations', import.meta.url));

export const watermarkService = defineService('watermark', watermarkConfigShape, migrationsFolder, async (ctx) => {
  // Before the workers: a production deployment without keys stops here, saying what is missing.
  const keyring = await resolveKeyring({
    env: ctx.config.CAIRN_ENV,
    configured: ctx.config.WATERMARK_KEYS,
    store: new GeneratedKeyStore(ctx.db),
    logger: ctx.logger,
  });
  const sizing =
    ctx.config.WATERMARK_WORKERS !== undefined
      ? { size: ctx.config.WATERMARK_WORKERS, source: 'WATERMARK_WORKERS' }
      : poolSizeFromCgroup();
  const pool = new ImageWorkerPool({ size: sizing.size });
  // A worker that cannot load fails start-up here rather than the first request.
  await pool.ready().catch(async (error: unknown) => {
    await pool.close(0);
    throw error;
  });
  // Draining: work already accepted finishes (within the grace period) before the workers stop.
  ctx.onShutdown(() => pool.close(ctx.config.SHUTDOWN_GRACE_MS));
  const handlers = watermarkHandlers({
    pool,
    codecs: mediaCodecs,
    registry: new MarkRegistry(ctx.db),
    keyring,
    minEmbedSize: CAIRN_DCT_V1.minEmbedSize,
    mediaLimits: mediaLimitsOf(ctx.config),
    detections: new DetectionMemo(ctx.config.WATERMARK_DETECTION_MEMO_MIB * 1024 * 1024),
    logger: ctx.logger,
  });
  ctx.rpc.add(watermarkV1.WatermarkService, handlers);
  ctx.logger.info(
    {
      workers: pool.size,
      workers_source: sizing.source,
      key_id: keyring.current.kid,
      detected_key_ids: keyring.all.map((k) => k.kid),
    },
    'image worker pool started',
  );
});
