import { blobKeyOf, type BlobStore } from '@cairn/blob';
import type { Event } from '@cairn/events';
import type { Tx } from '@cairn/db';
import type { Logger } from '@cairn/logging';
import { isCairnError } from '@cairn/errors';
import { checkMediaLimits, FfmpegError, sniffMediaType, SNIFF_BYTES, type MediaLimits } from '@cairn/media';
import { AudioTooShortError, AudioTooSparseError } from '../domain/audio.js';
import { fingerprintText, TextFingerprintError } from '../domain/text.js';
import { frameRows, VIDEO_ALG, VideoFingerprintError } from '../domain/video.js';
import type { Fingerprinters, IndexedAsset, IndexWriters } from './ports.js';

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
    const modality = indexedModality(data.media_type);
    if (!modality) return;
    const bytes = await signedAssetBytes(deps, event);
    if (!bytes) return;
    const record: IndexedAsset = {
      tenantId: event.tenant_id,
      assetId: data.asset_id,
      manifestId: data.manifest_id,
      manifestUri: data.manifest_uri,
      verifierUrl: data.verifier_url,
    };
    const attempt = attemptFor(deps, data);
    // The signer held the asset to the same limits, unless they were lowered since: then it is not decoded.
    const sniffed = sniffMediaType(bytes.subarray(0, SNIFF_BYTES));
    const withinLimits = await attempt('limits', async () => {
      if (sniffed) await checkMediaLimits(bytes, sniffed, deps.mediaLimits);
    });
    if (!withinLimits) return;
    await INDEX_PARTS[modality]({ deps, tx, bytes, record, attempt });
  };
}

type Modality = 'image' | 'video' | 'audio' | 'text';

/** The kinds of media that have a fingerprint index; any other is not indexed. */
function indexedModality(mediaType: string): Modality | undefined {
  const modality = mediaType.split('/')[0];
  if (modality === 'image' || modality === 'audio' || modality === 'video') return modality;
  return mediaType.startsWith('text/plain') ? 'text' : undefined;
}

/** The signed asset's bytes, when the event names an asset of its own tenant that still exists. */
async function signedAssetBytes(deps: IndexDeps, event: Event<'asset.signed'>): Promise<Buffer | undefined> {
  const { asset_id: assetId, blob_key: blobKey } = event.data;
  // The event names the asset's blob; only a signed asset of the event's own tenant is read (packages/blob keys.ts).
  if (!blobKeyOf(blobKey, 'asset', event.tenant_id)) {
    deps.logger.warn({ asset_id: assetId, blob_key: blobKey }, 'blob key is not an asset of this tenant; not indexed');
    return undefined;
  }
  // A deleted asset's blob is gone too, and is then not indexed.
  const bytes = await deps.blobs.getBuffer(blobKey);
  if (!bytes) {
    deps.logger.warn({ asset_id: assetId }, 'signed asset no longer available; not indexed');
    return undefined;
  }
  return bytes;
}

/** One part of an asset indexed, or skipped (false) when it cannot be fingerprinted. */
type Attempt = (part: string, work: () => Promise<void>) => Promise<boolean>;

/**
 * A part that cannot be fingerprinted (too short, too flat, undecodable) is logged and skipped (false): retrying
 * would not change it. A video's frames and its sound are two parts: either may be indexed without the other.
 */
function attemptFor(deps: IndexDeps, data: Event<'asset.signed'>['data']): Attempt {
  return async (part, work) => {
    try {
      await work();
      return true;
    } catch (error) {
      if (!unindexable(error)) throw error;
      deps.logger.warn(
        { asset_id: data.asset_id, media_type: data.media_type, part, err: error },
        'signed asset cannot be fingerprinted; not indexed',
      );
      return false;
    }
  };
}

interface Indexing {
  deps: IndexDeps;
  tx: Tx;
  bytes: Buffer;
  record: IndexedAsset;
  attempt: Attempt;
}

/** How each kind of media is fingerprinted and into which index. */
const INDEX_PARTS: Record<Modality, (indexing: Indexing) => Promise<void>> = {
  image: async ({ deps, tx, bytes, record, attempt }) => {
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
  },
  video: async ({ deps, tx, bytes, record, attempt }) => {
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
  },
  audio: async ({ deps, tx, bytes, record, attempt }) => {
    await attempt('audio', async () => deps.indexes.audio.add(tx, record, await deps.fingerprints.audio(bytes)));
  },
  text: async ({ deps, tx, bytes, record, attempt }) => {
    await attempt('text', async () => deps.indexes.text.add(tx, record, fingerprintText(bytes.toString('utf8'))));
  },
};

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
