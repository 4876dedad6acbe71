import { blobKeyOf, type BlobStore } from '@cairn/blob';
import type { Event } from '@cairn/events';
import type { Tx } from '@cairn/db';
import type { Logger } from '@cairn/logging';
import { isCairnError } from '@cairn/errors';
import { checkMediaLimits, FfmpegError, sniffMediaType, SNIFF_BYTES, type MediaLimits } from '@cairn/media';
import { AudioTooShortError, AudioTooSparseError } from '../domain/audio.js';
import { fingerprintText, TextFingerprintError } from '../domain/text.js';
import { frameRows, VIDEO_ALG, VideoFingerprintError } from '../domain/video.js';
import type { Fingerprinters, IndexWriters } from './ports.js';

export interface IndexDeps {
  blobs: BlobStore;
  /** The indexes themselves: indexing writes in the event's transaction. */
  indexes: IndexWriters;
  fingerprints: Fingerprinters;
  logger: Logger;
  mediaLimits: MediaLimits;
}

/**
 * Indexes the fingerprints of every signed asset whose recipe enables soft binding: images (PDQ, whole and crops),
 * video (PDQ of frames at scene changes, and its sound as audio), audio (spectral-peak landmarks), text (MinHash).
 * Runs in the idempotent consumer's transaction (tenant set, event id claimed): a redelivered asset.signed indexes
 * nothing twice.
 */
export function indexSignedAsset(deps: IndexDeps) {
  return async (event: Event<'asset.signed'>, tx: Tx): Promise<void> => {
    const data = event.data;
    if (!data.soft_binding) return;
    const modality = data.media_type.split('/')[0];
    if (
      modality !== 'image' &&
      modality !== 'audio' &&
      modality !== 'video' &&
      !data.media_type.startsWith('text/plain')
    )
      return;
    const assetId = data.asset_id;
    // The event names the asset's blob; only a signed asset of the event's own tenant is read (packages/blob keys.ts).
    if (!blobKeyOf(data.blob_key, 'asset', event.tenant_id)) {
      deps.logger.warn(
        { asset_id: assetId, blob_key: data.blob_key },
        'blob key is not an asset of this tenant; not indexed',
      );
      return;
    }
    // A deleted asset's blob is gone too, and is then not indexed.
    const bytes = await deps.blobs.getBuffer(data.blob_key);
    if (!bytes) {
      deps.logger.warn({ asset_id: assetId }, 'signed asset no longer available; not indexed');
      return;
    }
    const record = {
      tenantId: event.tenant_id,
      assetId,
      manifestId: data.manifest_id,
      manifestUri: data.manifest_uri,
      verifierUrl: data.verifier_url,
    };
    // A part that cannot be fingerprinted (too short, too flat, undecodable) is logged and skipped (false): retrying
    // would not change it. A video's frames and its sound are two parts: either may be indexed without the other.
    const attempt = async (part: string, work: () => Promise<void>): Promise<boolean> => {
      try {
        await work();
        return true;
      } catch (error) {
        if (!unindexable(error)) throw error;
        deps.logger.warn(
          { asset_id: assetId, media_type: data.media_type, part, err: error },
          'signed asset cannot be fingerprinted; not indexed',
        );
        return false;
      }
    };
    // The signer held the asset to the same limits, unless they were lowered since: then it is not decoded.
    const sniffed = sniffMediaType(bytes.subarray(0, SNIFF_BYTES));
    const withinLimits = await attempt('limits', async () => {
      if (sniffed) await checkMediaLimits(bytes, sniffed, deps.mediaLimits);
    });
    if (!withinLimits) return;
    if (modality === 'image') {
      await attempt('image', async () => {
        const hashes = await deps.fingerprints.imageHashes(bytes);
        await deps.indexes.images.add(
          tx,
          hashes.map((h) => ({
            ...record,
            alg: deps.fingerprints.imageAlg,
            variant: h.variant,
            bits: h.bits,
            quality: h.quality,
          })),
        );
      });
    } else if (modality === 'video') {
      await attempt('frames', async () => {
        const frames = await deps.fingerprints.videoFrames(bytes, { crops: true });
        await deps.indexes.images.add(
          tx,
          // Whole frames and their crops (a cropped copy's frames land near these: domain/video.ts FRAME_CROPS).
          frameRows(frames).map((row) => ({ ...record, alg: VIDEO_ALG, ...row })),
        );
      });
      // The sound is indexed as audio of the same asset: an audio lookup of the sound taken out of the video (the
      // soundtrack as MP3, WAV or M4A) finds the video it came from.
      await attempt('sound', async () => {
        const sound = await deps.fingerprints.soundtrack(bytes);
        if (sound) await deps.indexes.audio.add(tx, record, sound);
      });
    } else if (modality === 'audio') {
      await attempt('audio', async () => deps.indexes.audio.add(tx, record, await deps.fingerprints.audio(bytes)));
    } else {
      await attempt('text', async () => deps.indexes.text.add(tx, record, fingerprintText(bytes.toString('utf8'))));
    }
  };
}

function unindexable(error: unknown): boolean {
  return (
    error instanceof AudioTooShortError ||
    error instanceof AudioTooSparseError ||
    error instanceof TextFingerprintError ||
    error instanceof VideoFingerprintError ||
    error instanceof FfmpegError ||
    (isCairnError(error) && error.code === 'cairn.media.too_large')
  );
}
