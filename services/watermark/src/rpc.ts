import { setTimeout as sleep } from 'node:timers/promises';
import { CairnError } from '@cairn/errors';
import type { watermarkV1 } from '@cairn/proto';
import type { ImplOf } from '@cairn/rpc';
import type { WatermarkDeps } from './app/deps.js';
import { detectAudio } from './app/detect-audio.js';
import { detectImage } from './app/detect-image.js';
import { detectVideo } from './app/detect-video.js';
import { embedAudio } from './app/embed-audio.js';
import { embedImage } from './app/embed-image.js';
import { embedVideo, type EmbedVideoInput } from './app/embed-video.js';
import { resolvePayload } from './app/resolve-payload.js';
import { PAYLOAD_BYTES } from './domain/payload.js';
import { requireId } from './domain/validation.js';

const PAYLOAD_HEX = new RegExp(`^[0-9a-f]{${PAYLOAD_BYTES * 2}}$`);
const SHA256_HEX = /^[0-9a-f]{64}$/;

/** The file a request carries: required, never empty. */
function requireFile(encoded: Uint8Array, what: 'image' | 'audio' | 'video'): Uint8Array {
  if (encoded.length === 0)
    throw new CairnError('cairn.validation.invalid_body', `encoded (the ${what} file) is required`, {
      errors: [{ path: 'encoded', message: 'required' }],
    });
  return encoded;
}

/** The video of an EmbedVideo request, its ids and file checked. */
function videoInput(request: watermarkV1.EmbedVideoRequest): EmbedVideoInput {
  const tenantId = requireId('tenant', request.tenantId, 'tenant_id');
  const watermarkId = requireId('watermark', request.watermarkId, 'watermark_id');
  const assetId = requireId('asset', request.assetId, 'asset_id');
  return { tenantId, watermarkId, assetId, encoded: requireFile(request.encoded, 'video') };
}

interface VideoProgress {
  framesMarked: number;
  framesExpected: number;
  fraction: number;
}

/** A progress message at most this often: a 720p30 video reports 30 frames a second, its caller needs far fewer. */
const PROGRESS_INTERVAL_MS = 500;

/**
 * The messages of a streamed use case: the latest progress it reported, at most one every `intervalMs` and only
 * when it moved, then its result. Holds one progress value, however fast the use case reports.
 */
async function* withProgress<P, R>(
  intervalMs: number,
  run: (report: (progress: P) => void) => Promise<R>,
): AsyncGenerator<{ update: { case: 'progress'; value: P } | { case: 'result'; value: R } }> {
  let latest: P | undefined;
  let sent: P | undefined;
  const work = run((progress) => {
    latest = progress;
  });
  const finished = work.then(
    () => true,
    () => true,
  );
  for (;;) {
    const ticker = new AbortController();
    const done = await Promise.race([finished, sleep(intervalMs, false, { signal: ticker.signal }).catch(() => false)]);
    ticker.abort();
    if (done) break;
    if (latest !== undefined && latest !== sent) {
      sent = latest;
      yield { update: { case: 'progress', value: latest } };
    }
  }
  yield { update: { case: 'result', value: await work } };
}

/** cairn.watermark.v1.WatermarkService: the wire onto the use cases of app/ (embed, detect, resolve). */
export function watermarkHandlers(deps: WatermarkDeps): ImplOf<typeof watermarkV1.WatermarkService> {
  return {
    embedImage: async (request) => {
      const tenantId = requireId('tenant', request.tenantId, 'tenant_id');
      const watermarkId = requireId('watermark', request.watermarkId, 'watermark_id');
      const assetId = requireId('asset', request.assetId, 'asset_id');
      return embedImage(deps, { tenantId, watermarkId, assetId, encoded: requireFile(request.encoded, 'image') });
    },
    detectImage: async (request) => {
      const how = { cairnCopy: request.cairnCopy, lane: request.background ? 'background' : 'foreground' } as const;
      // A file named by its digest instead of sent: answered from a kept reading, or reading_missing.
      if (request.encoded.length === 0 && request.sha256 !== '') {
        if (!SHA256_HEX.test(request.sha256))
          throw new CairnError('cairn.validation.invalid_body', 'sha256 must be 64 lower-case hex digits', {
            errors: [{ path: 'sha256', message: 'not a SHA-256' }],
          });
        return detectImage(deps, { sha256: request.sha256, ...how });
      }
      return detectImage(deps, { encoded: requireFile(request.encoded, 'image'), ...how });
    },
    embedAudio: async (request) => {
      const tenantId = requireId('tenant', request.tenantId, 'tenant_id');
      const watermarkId = requireId('watermark', request.watermarkId, 'watermark_id');
      const assetId = requireId('asset', request.assetId, 'asset_id');
      return embedAudio(deps, { tenantId, watermarkId, assetId, encoded: requireFile(request.encoded, 'audio') });
    },
    detectAudio: async (request) => detectAudio(deps, requireFile(request.encoded, 'audio')),
    embedVideo: async (request) => embedVideo(deps, videoInput(request)),
    embedVideoWithProgress: (request) => {
      if (!request.video)
        throw new CairnError('cairn.validation.invalid_body', 'video (the EmbedVideoRequest) is required', {
          errors: [{ path: 'video', message: 'required' }],
        });
      const input = videoInput(request.video);
      return withProgress<VideoProgress, Awaited<ReturnType<typeof embedVideo>>>(PROGRESS_INTERVAL_MS, (report) =>
        embedVideo(deps, input, ({ framesMarked, framesExpected }) =>
          report({ framesMarked, framesExpected, fraction: Math.min(1, framesMarked / framesExpected) }),
        ),
      );
    },
    detectVideo: async (request) => detectVideo(deps, requireFile(request.encoded, 'video')),
    resolvePayload: async (request) => {
      const hex = request.payloadHex.toLowerCase();
      if (!PAYLOAD_HEX.test(hex))
        throw new CairnError('cairn.validation.invalid_body', `payload_hex must be ${PAYLOAD_BYTES * 2} hex digits`);
      return resolvePayload(deps.registry, hex);
    },
  };
}
