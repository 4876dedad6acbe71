import { blobKeys, type BlobStore } from '@cairn/blob';
import { CairnError } from '@cairn/errors';
import { isId } from '@cairn/ids';
import { checkMediaLimits, sniffMediaType, SNIFF_BYTES, thumbnailOfFile, type MediaLimits } from '@cairn/media';
import type { AssetRow } from './ports.js';

/** Longest side of the public page's thumbnail, pixels. */
export const PAGE_THUMBNAIL_SIDE = 320;

export interface ThumbnailDeps {
  assets: { getPublic(assetId: string): Promise<AssetRow | null> };
  blobs: BlobStore;
  mediaLimits: MediaLimits;
}

const kept = (row: AssetRow | null): row is AssetRow & { blobKey: string } =>
  row !== null && row.deletedAt === null && row.expiresAt.getTime() > Date.now() && row.blobKey !== null;

/**
 * The public page's thumbnail of a signed image (`/v/{asset_id}/thumbnail.jpg`). The signer owns the signed file,
 * so it makes the thumbnail, once: on the first request, under its media limits, then kept in the blob store for
 * the asset's retention (the expiry sweep deletes it with the file). Not found for an unknown or expired asset and
 * for one that is no image.
 */
export async function pageThumbnail(deps: ThumbnailDeps, assetId: string): Promise<Buffer> {
  const notFound = (why = 'not found') => new CairnError('cairn.not_found', `Thumbnail of asset ${assetId}: ${why}.`);
  const row = isId('asset', assetId) ? await deps.assets.getPublic(assetId) : null;
  if (!kept(row)) throw notFound();
  // Beside the tenant's assets, deleted with them when retention ends.
  const key = blobKeys.thumbnail(row.tenantId, row.assetId);
  const stored = await deps.blobs.getBuffer(key);
  if (stored) return stored;

  const file = await deps.blobs.getBuffer(row.blobKey);
  if (!file) throw notFound();
  const sniffed = sniffMediaType(file.subarray(0, SNIFF_BYTES));
  if (sniffed?.modality !== 'image') throw notFound(`the asset is ${sniffed?.modality ?? 'not an image'}`);
  // The file was checked when it was signed; the limits may have been lowered since.
  await checkMediaLimits(file, sniffed, deps.mediaLimits);
  const thumbnail = await thumbnailOfFile(file, deps.mediaLimits.imagePixels, PAGE_THUMBNAIL_SIDE);
  if (!thumbnail) throw notFound('the signed file cannot be decoded');
  await deps.blobs.put(key, thumbnail, { contentType: 'image/jpeg' });
  // The expiry sweep may have passed between the check above and the write: a thumbnail outliving its asset's
  // retention is removed again (it would never be served, but it must not be kept either).
  if (!kept(await deps.assets.getPublic(assetId))) {
    await deps.blobs.delete(key);
    throw notFound();
  }
  return thumbnail;
}
