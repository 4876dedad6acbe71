import type { BlobStore } from '@cairn/blob';
import { CairnError } from '@cairn/errors';
import { isId } from '@cairn/ids';
import type { MediaLimits } from '@cairn/media';
import { activeManifestOnly } from '../domain/manifest-store.js';
import type { AssetRecords, AssetRow, ManifestRow } from './ports.js';
import { pageThumbnail } from './thumbnails.js';

export type { AssetRow, ManifestRow };

/** A manifest store as served: its bytes, its row, and the asset it belongs to (when still held). */
export interface ServedManifest {
  bytes: Buffer;
  row: ManifestRow;
  asset: AssetRow | null;
}

/** Reads of signed assets and their manifests. */
export class Assets {
  constructor(
    private readonly store: AssetRecords,
    private readonly blobs: BlobStore,
    private readonly mediaLimits: MediaLimits,
  ) {}

  async ofTenant(tenantId: string, assetId: string): Promise<AssetRow> {
    const row = await this.store.getForTenant(tenantId, assetId);
    if (!row) throw new CairnError('cairn.not_found', `Asset ${assetId} not found.`);
    return row;
  }

  async public(assetId: string): Promise<AssetRow> {
    const row = isId('asset', assetId) ? await this.store.getPublic(assetId) : null;
    if (!row) throw new CairnError('cairn.not_found', `Asset ${assetId} not found.`);
    return row;
  }

  async byContent(contentSha256: string): Promise<AssetRow | null> {
    if (!/^[0-9a-f]{64}$/.test(contentSha256))
      throw new CairnError('cairn.validation.invalid_body', 'content_sha256 is 64 lowercase hex digits.');
    return this.store.findByContent(contentSha256);
  }

  /**
   * A manifest store by its id, or (no id) by its C2PA label; only its active manifest when `activeOnly`; with
   * `withoutStore` its row and asset only (the bytes empty, the store not read).
   */
  async manifest(
    manifestId: string,
    label: string,
    { activeOnly = false, withoutStore = false }: { activeOnly?: boolean; withoutStore?: boolean } = {},
  ): Promise<ServedManifest> {
    const row = isId('manifest', manifestId)
      ? await this.store.getManifest(manifestId)
      : !manifestId && isManifestLabel(label)
        ? await this.store.getManifestByLabel(label)
        : null;
    if (row && withoutStore) return { bytes: Buffer.alloc(0), row, asset: await this.store.getPublic(row.assetId) };
    const bytes = row ? await this.blobs.getBuffer(row.blobKey) : null;
    if (!row || !bytes) throw new CairnError('cairn.not_found', `Manifest ${manifestId || label} not found.`);
    const served = activeOnly ? activeManifestOnly(bytes) : bytes;
    if (!served) throw new CairnError('cairn.internal_error', 'The stored manifest store cannot be read.');
    return { bytes: served, row, asset: await this.store.getPublic(row.assetId) };
  }

  /** The page thumbnail of a public asset (app/thumbnails.ts). */
  async thumbnail(assetId: string): Promise<Buffer> {
    return pageThumbnail({ assets: this.store, blobs: this.blobs, mediaLimits: this.mediaLimits }, assetId);
  }
}

/** A C2PA manifest label as c2pa-rs writes it: urn:c2pa:<uuid>[:<generator>[:<version>]] or the older urn:uuid:<uuid>. */
function isManifestLabel(label: string): boolean {
  return (
    label.length <= 256 &&
    /^urn:(c2pa|uuid):[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(:[\w.-]*){0,2}$/i.test(label)
  );
}
