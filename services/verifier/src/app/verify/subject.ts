import { blobKeyOf, PUBLIC_OWNER } from '@cairn/blob';
import { manifestUrl } from '@cairn/config';
import { CairnError } from '@cairn/errors';
import { fromTimestamp, type verifierV1 } from '@cairn/proto';
import type { VerifyDeps } from './deps.js';

export interface Subject {
  bytes: Buffer;
  /** Set when the file is an upload (the soft-binding service reads it from the blob store). */
  uploadBlobKey?: string;
  /** When the file is a Cairn asset known by id (asset_id or manifest_uri input). */
  assetId?: string;
  manifestId?: string;
  expiresAt?: Date;
}

/** Resolves the three kinds of input to the bytes to verify. manifest_uri is only ever Cairn's own store. */
export async function resolveSubject(deps: VerifyDeps, request: verifierV1.VerifyRequest): Promise<Subject> {
  const input = request.input;
  switch (input.case) {
    case 'uploadBlobKey':
      return uploadedFile(deps, request.tenantId, input.value);
    case 'assetId':
      return assetFile(deps, request.tenantId, input.value);
    case 'manifestUri':
      return manifestFile(deps, input.value);
    default:
      throw new CairnError(
        'cairn.verify.no_input',
        'Send exactly one of: a file (multipart field "file"), asset_id, or manifest_uri.',
      );
  }
}

/**
 * Verify an upload: the file the caller sent, kept in the blob store under its upload key, which must be an upload
 * of the calling tenant (or of `public` for a verify without one): no other key reaches the blob store.
 */
async function uploadedFile(deps: VerifyDeps, tenantId: string, uploadBlobKey: string): Promise<Subject> {
  if (!blobKeyOf(uploadBlobKey, 'upload', tenantId || PUBLIC_OWNER))
    throw new CairnError('cairn.validation.invalid_body', 'upload_blob_key must name an upload of the caller.');
  const bytes = await deps.blobs.getBuffer(uploadBlobKey);
  if (!bytes) throw new CairnError('cairn.verify.no_input', 'The upload is gone; send the file again.');
  return { bytes, uploadBlobKey };
}

/** Verify by asset: the tenant's own asset, as Cairn keeps its signed file (until its retention ends). */
async function assetFile(deps: VerifyDeps, tenantId: string, assetId: string): Promise<Subject> {
  if (!tenantId) throw new CairnError('cairn.not_found', `Asset ${assetId} not found.`);
  const { asset } = await deps.signer.getAsset({ tenantId, assetId });
  if (!asset || asset.expired || !asset.blobKey)
    throw new CairnError('cairn.not_found', `The file of asset ${assetId} is no longer kept (its retention ended).`);
  const bytes = await deps.blobs.getBuffer(asset.blobKey);
  if (!bytes) throw new CairnError('cairn.not_found', `The file of asset ${assetId} is no longer kept.`);
  return {
    bytes,
    assetId: asset.assetId,
    manifestId: asset.manifestId,
    ...(asset.expiresAt ? { expiresAt: fromTimestamp(asset.expiresAt) } : {}),
  };
}

/** Verify by manifest URL: only Cairn's own `/v1/manifests/{id}`, resolved to the file signed under it. */
async function manifestFile(deps: VerifyDeps, uri: string): Promise<Subject> {
  const manifestId = ownManifestId(deps.publicBaseUrl, uri);
  if (!manifestId) {
    throw new CairnError(
      'cairn.validation.invalid_body',
      `manifest_uri must be a Cairn manifest URL (${manifestUrl(deps.publicBaseUrl, '<id>')}); other hosts are not fetched.`,
      {
        errors: [{ path: 'manifest_uri', message: 'not a Cairn manifest URL' }],
      },
    );
  }
  // The file carries its manifest (the C2PA reader reads it there): the store's own bytes are not fetched.
  const manifest = await deps.signer.getManifest({ manifestId, withoutStore: true });
  const bytes = manifest.assetBlobKey ? await deps.blobs.getBuffer(manifest.assetBlobKey) : null;
  if (!bytes)
    throw new CairnError(
      'cairn.not_found',
      `The file signed under manifest ${manifestId} is no longer kept (its retention ended).`,
    );
  return {
    bytes,
    assetId: manifest.assetId,
    manifestId,
    ...(manifest.expiresAt ? { expiresAt: fromTimestamp(manifest.expiresAt) } : {}),
  };
}

/** `{base}/v1/manifests/{m_id}` on Cairn's own public address: the only manifest URLs followed. */
export function ownManifestId(publicBaseUrl: string, uri: string): string | null {
  let url: URL;
  let base: URL;
  try {
    url = new URL(uri);
    base = new URL(publicBaseUrl);
  } catch {
    return null;
  }
  if (url.origin !== base.origin) return null;
  const prefix = `${base.pathname.replace(/\/$/, '')}/v1/manifests/`;
  if (!url.pathname.startsWith(prefix)) return null;
  const id = url.pathname.slice(prefix.length);
  return /^m_[0-9A-HJKMNP-TV-Z]{26}$/.test(id) ? id : null;
}
