import { createHash, X509Certificate } from 'node:crypto';
import { blobKeys } from '@cairn/blob';
import { newEvent, type AnyEvent } from '@cairn/events';
import { withTenant, type Tx } from '@cairn/db';
import { CairnError } from '@cairn/errors';
import type { GenerationMetadata } from '../../domain/metadata.js';
import type { ActiveSigningKey } from '../ports.js';
import type { AcceptedUpload } from './accept.js';
import { timed, type EmbeddedWatermark, type PipelineDeps, type SignedBytes, type SignResult } from './deps.js';

/** Where a signed asset and its manifest store are kept, and what the stored asset is. */
export interface StoredBlobs {
  assetKey: string;
  manifestKey: string;
  sizeBytes: number;
  contentSha256: string;
}

/** Step 3: the signed file and its manifest store written to the blob store (nothing refers to them yet). */
export async function storeBlobs(
  deps: PipelineDeps,
  target: { tenantId: string; assetId: string; manifestId: string; extension: string; mediaType: string },
  signed: SignedBytes,
): Promise<StoredBlobs> {
  const assetKey = blobKeys.asset(target.tenantId, target.assetId, target.extension);
  const manifestKey = blobKeys.manifest(target.manifestId);
  const [stored] = await timed(deps, 'store', () =>
    Promise.all([
      deps.blobs.put(assetKey, signed.signed, { contentType: target.mediaType }),
      deps.blobs.put(manifestKey, signed.manifestStore, { contentType: 'application/c2pa' }),
    ]),
  );
  return { assetKey, manifestKey, sizeBytes: stored.size, contentSha256: stored.sha256 };
}

/**
 * The signer as pages name it: O — CN of the leaf, and for a tenant's own key (BYOK) that it was the tenant's key,
 * not Cairn's (the verifier says the same of the manifest: its signing_key claim).
 */
function signerNameOf(active: ActiveSigningKey): string {
  const name = certificateNameOf(active.certificatePem);
  return active.credentialId ? `${name} (the tenant's own key)` : name;
}

function certificateNameOf(certificatePem: string): string {
  const subject = new X509Certificate(certificatePem).subject;
  const field = (name: string) =>
    subject
      .split('\n')
      .find((l) => l.startsWith(`${name}=`))
      ?.slice(name.length + 1);
  return [field('O'), field('CN')].filter(Boolean).join(' — ') || subject;
}

/** This attempt's claim on the asset id lapsed and another attempt took it over: it records nothing. */
class ClaimLost extends Error {}

export interface RecordInput {
  tenantId: string;
  accepted: AcceptedUpload;
  result: SignResult;
  signed: SignedBytes;
  blobs: StoredBlobs;
  watermark: EmbeddedWatermark | undefined;
  active: ActiveSigningKey;
  metadata: GenerationMetadata;
  manifestDigest: string;
  createdAt: Date;
  expiresAt: Date;
  /** The claim on the asset id this sign runs under (AssetStore.claimAsset); recording drops it. */
  claimId: string;
  /** The billing reservations the caller made for this sign ('' = none): asset.signed names them for billing. */
  reservationId: string;
  byokReservationId: string;
}

/**
 * Step 4: the asset, its manifest and their events (asset.signed, manifest.signed, and the caller's own through
 * `onCommitted`) recorded in one transaction; when it does not commit, the blobs are deleted (nothing refers to
 * them).
 */
export async function recordSigned(
  deps: PipelineDeps,
  input: RecordInput,
  onCommitted?: (tx: Tx, result: SignResult) => Promise<void>,
): Promise<void> {
  const { blobs } = input;
  try {
    await timed(deps, 'record', () =>
      withTenant(deps.db, input.tenantId, async (tx) => {
        const recorded = await deps.store.insertSigned(tx, assetRowOf(input), manifestRowOf(input), input.claimId);
        if (!recorded) throw new ClaimLost();
        await deps.outbox.enqueue(tx, assetSignedEvent(input));
        await deps.outbox.enqueue(tx, manifestSignedEvent(input));
        if (onCommitted) await onCommitted(tx, input.result);
      }),
    );
  } catch (error) {
    if (error instanceof ClaimLost) {
      // The asset's file is at the same key for the attempt that took the claim over: only the manifest store,
      // under this attempt's own manifest id, is this attempt's to delete. Its caller retries for the answer.
      await deps.blobs.delete(blobs.manifestKey).catch(() => undefined); // unreferenced either way
      throw new CairnError(
        'cairn.idempotency.in_progress',
        `Asset ${input.result.assetId} is being signed by a later attempt; retry to get its answer.`,
        {},
        { cause: error },
      );
    }
    // Nothing refers to the blobs if the record did not commit.
    await Promise.allSettled([deps.blobs.delete(blobs.assetKey), deps.blobs.delete(blobs.manifestKey)]);
    throw error;
  }
}

type InsertSigned = Parameters<PipelineDeps['store']['insertSigned']>;

/** The signed asset's row. */
function assetRowOf(input: RecordInput): InsertSigned[1] {
  const { tenantId, accepted, result, blobs, watermark, active } = input;
  return {
    assetId: result.assetId,
    tenantId,
    recipeId: accepted.recipe.recipeId,
    mediaType: result.mediaType,
    sizeBytes: blobs.sizeBytes,
    contentSha256: blobs.contentSha256,
    uploadSha256: createHash('sha256').update(accepted.upload).digest('hex'),
    watermarkId: watermark?.id ?? null,
    watermarkPayload: watermark?.payloadHex ?? null,
    manifestId: result.manifestId,
    blobKey: blobs.assetKey,
    metadata: { ...input.metadata },
    signerName: signerNameOf(active),
    certificateSerial: active.serialHex,
    createdAt: input.createdAt,
    expiresAt: input.expiresAt,
  };
}

/** Its manifest's row. */
function manifestRowOf(input: RecordInput): InsertSigned[2] {
  const { tenantId, result, signed, blobs } = input;
  return {
    manifestId: result.manifestId,
    assetId: result.assetId,
    tenantId,
    blobKey: blobs.manifestKey,
    label: signed.manifestLabel,
    sizeBytes: signed.manifestStore.length,
    createdAt: input.createdAt,
  };
}

/** asset.signed: what the soft-binding, anchor, billing and webhook consumers need of the new asset. */
function assetSignedEvent(input: RecordInput): AnyEvent {
  const { tenantId, accepted, result, blobs, watermark } = input;
  const { recipe } = accepted;
  return newEvent('asset.signed', tenantId, {
    asset_id: result.assetId,
    manifest_id: result.manifestId,
    recipe_id: recipe.recipeId,
    media_type: result.mediaType,
    'billing.meter': recipe.meter,
    watermark_id: watermark?.id ?? null,
    watermark_payload: watermark?.payloadHex ?? null,
    ...(result.watermarkNotEmbeddedReason ? { watermark_not_embedded: result.watermarkNotEmbeddedReason } : {}),
    manifest_uri: result.manifestUri,
    verifier_url: result.verifierUrl,
    content_sha256: blobs.contentSha256,
    blob_key: blobs.assetKey,
    soft_binding: recipe.softBinding,
    anchor: recipe.anchor,
    // The anchor service also consumes this (idempotently), so a digest whose Enqueue call failed is anchored anyway.
    ...(recipe.anchor ? { manifest_digest: input.manifestDigest } : {}),
    ...(input.reservationId ? { reservation_id: input.reservationId } : {}),
    ...(input.byokReservationId ? { byok_reservation_id: input.byokReservationId } : {}),
  });
}

function manifestSignedEvent(input: RecordInput): AnyEvent {
  const { result } = input;
  return newEvent('manifest.signed', input.tenantId, {
    manifest_id: result.manifestId,
    asset_id: result.assetId,
    recipe: input.accepted.recipe.recipeId,
    status: 'signed',
  });
}
