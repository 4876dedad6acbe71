import { createHash } from 'node:crypto';
import { assetContentUrl, manifestUrl, verifierPageUrl } from '@cairn/config';
import type { Tx } from '@cairn/db';
import { CairnError } from '@cairn/errors';
import { newId } from '@cairn/ids';
import { inSpan } from '@cairn/telemetry';
import { acceptUpload, type AcceptedUpload } from './accept.js';
import { enqueueAnchor } from './anchor.js';
import { c2paStep, type SignWithC2pa } from './c2pa.js';
import type { PipelineDeps, SignProgress, SignRequest, SignResult } from './deps.js';
import type { ActiveSigningKey } from '../ports.js';
import type { AssetRow } from '../ports.js';
import { produceSigned, type Produced } from './produce.js';
import { recordSigned, storeBlobs } from './record.js';

const DAY_MS = 86_400_000;

/** A sign's claim on its asset id lives this long by default: well past a sign's 120 s deadline. */
export const ASSET_CLAIM_LEASE_SECONDS = 180;

function noCredentials(): never {
  throw new CairnError(
    'cairn.sign.invalid_recipe',
    'Signing with a tenant credential is not available on this signer.',
  );
}

/**
 * One sign: the upload is read once, decoded once; the watermark is embedded in those pixels, the thumbnail
 * made from them, the result encoded once and signed once. Everything is recorded, with its events, in one
 * transaction after the blobs are written, so a failure leaves no half-signed asset behind.
 *
 * Steps: accept (accept.ts) → produce the signed file (produce.ts, with the C2PA step of c2pa.ts) → store the
 * blobs and record (record.ts) → anchor (anchor.ts; before the record for a job, after it otherwise).
 */
export async function signAsset(
  deps: PipelineDeps,
  request: SignRequest,
  onCommitted?: (tx: Tx, result: SignResult) => Promise<void>,
  progress?: SignProgress,
): Promise<SignResult> {
  const { tenantId, assetId } = request;
  progress?.('reading', 0);
  // The upload is read, sniffed and held to the limits while the claim is asked: independent round trips (blob
  // store, Postgres) that used to run in series. The claim decides: a replayed, busy or foreign id drops what was
  // read, and any error reading it.
  const accepting = acceptUpload(deps, request);
  accepting.catch(() => undefined); // awaited (and thrown) in signClaimed when the claim says run; dropped otherwise
  // Idempotent by asset id (the caller chooses it, and keeps it across its retries:
  // docs/decisions/0020-sign-idempotent-by-asset-id.md). A job claims under its own id, so its next attempt (the signer
  // running it died) takes its claim over at once.
  const claim = await inSpan('sign.claim', () =>
    deps.store.claimAsset(
      tenantId,
      assetId,
      deps.assetClaimLeaseSeconds ?? ASSET_CLAIM_LEASE_SECONDS,
      ...(request.jobId ? [`job:${request.jobId}`] : []),
    ),
  );
  if (claim.kind === 'recorded') return { ...recordedResult(deps, claim.asset), replayed: true };
  if (claim.kind === 'busy')
    throw new CairnError(
      'cairn.idempotency.in_progress',
      `Asset ${assetId} is being signed by an earlier attempt; retry after ${claim.retryAfterSeconds} s for its answer.`,
    );
  if (claim.kind === 'foreign')
    throw new CairnError('cairn.sign.idempotency_conflict', `Asset id ${assetId} belongs to another sign.`);
  try {
    return await signClaimed(deps, request, claim.claimId, accepting, onCommitted, progress);
  } catch (error) {
    // Nothing was recorded: a retry with this asset id may run at once. (Recording dropped the claim otherwise;
    // if this fails too, the lease runs out instead.)
    await deps.store
      .releaseClaim(tenantId, assetId, claim.claimId)
      .catch((releaseError: unknown) =>
        deps.logger?.warn(
          { err: releaseError, asset_id: assetId },
          'sign claim not released; it lapses with its lease',
        ),
      );
    throw error;
  }
}

/** The answer of an asset already recorded, as its sign answered it (less the anchor's state, which moved on). */
function recordedResult(deps: PipelineDeps, asset: AssetRow): SignResult {
  return {
    assetId: asset.assetId,
    watermarkId: asset.watermarkId ?? '',
    manifestId: asset.manifestId,
    manifestUri: manifestUrl(deps.publicBaseUrl, asset.manifestId),
    verifierUrl: verifierPageUrl(deps.publicBaseUrl, asset.assetId),
    assetUrl: assetContentUrl(deps.publicBaseUrl, asset.assetId),
    mediaType: asset.mediaType,
    createdAt: asset.createdAt.toISOString(),
    expiresAt: asset.expiresAt.toISOString(),
  };
}

/**
 * A claimed sign: the key chosen, the file produced and signed, its blobs stored, its anchor enqueued and
 * everything recorded.
 */
async function signClaimed(
  deps: PipelineDeps,
  request: SignRequest,
  claimId: string,
  accepting: Promise<AcceptedUpload>,
  onCommitted?: (tx: Tx, result: SignResult) => Promise<void>,
  progress?: SignProgress,
): Promise<SignResult> {
  const accepted = await accepting;
  const { recipe, metadata, sniffed } = accepted;
  const { tenantId, assetId } = request;
  // Known before signing: the manifest names its own id and asset in the signed com.cairn.record assertion.
  const manifestId = newId('manifest');
  const active = await signingKeyOf(deps, request);
  const c2paSign = c2paStep(deps, {
    recipe,
    metadata,
    title: `${assetId}.${sniffed.extension}`,
    assetId,
    manifestId,
    active,
  });
  const sign: SignWithC2pa = (input) => {
    progress?.('signing', 1);
    return c2paSign(input);
  };
  const produced = await produceSigned(deps, { tenantId, assetId }, accepted, sign, progress);
  const { signed, watermark } = produced;
  progress?.('storing', 1);
  // What anchoring commits to: SHA-256 of the manifest store bytes, as served at manifest_uri.
  const manifestDigest = createHash('sha256').update(signed.manifestStore).digest('hex');
  const anchor = anchoring(deps, recipe.anchor, onCommitted !== undefined, {
    tenantId,
    assetId,
    manifestId,
    manifestDigest,
  });
  const blobs = await storeBlobs(
    deps,
    { tenantId, assetId, manifestId, extension: sniffed.extension, mediaType: sniffed.mediaType },
    signed,
  );
  const { result, createdAt, expiresAt } = resultOf(deps, request, accepted, manifestId, produced);
  await anchor.beforeRecord(result);
  await recordSigned(
    deps,
    {
      tenantId,
      accepted,
      result,
      signed,
      blobs,
      watermark,
      active,
      metadata,
      manifestDigest,
      createdAt,
      expiresAt,
      claimId,
      reservationId: request.reservationId,
      byokReservationId: request.byokReservationId,
    },
    onCommitted,
  );
  void deps.outbox.flush();
  await anchor.afterRecord(result);
  return result;
}

/** Bring your own key: the tenant's chain, signed by its own endpoint; otherwise Cairn's active key. */
function signingKeyOf(deps: PipelineDeps, request: SignRequest): Promise<ActiveSigningKey> {
  return inSpan('sign.key', () =>
    request.signingCredentialId
      ? (deps.credentials ?? noCredentials()).activeKey(request.tenantId, request.signingCredentialId)
      : deps.authority.activeSigningKey(),
  );
}

/**
 * When a sign's anchor is enqueued, and its state put in the answer. A job's result is committed with its asset
 * (onCommitted), so its anchor must be known before the record. A synchronous sign enqueues while its blobs are
 * written and its record committed (the enqueue is a round trip to the anchor service and its open batch, not
 * worth waiting for in series); should the record then fail, the leaf names a manifest nobody holds (harmless)
 * and a retry signs under a new manifest id. enqueueAnchor never throws: an anchor service that does not answer
 * leaves the manifest to be anchored from asset.signed.
 */
function anchoring(
  deps: PipelineDeps,
  recipeAnchors: boolean,
  forJob: boolean,
  input: Parameters<typeof enqueueAnchor>[1],
): { beforeRecord(result: SignResult): Promise<void>; afterRecord(result: SignResult): Promise<void> } {
  const wanted = recipeAnchors && deps.anchor !== undefined;
  const first = forJob && wanted;
  const alongside = !first && wanted ? enqueueAnchor(deps, input) : undefined;
  const into = async (result: SignResult, enqueued: ReturnType<typeof enqueueAnchor>) => {
    const anchor = await enqueued;
    if (anchor) result.anchor = anchor;
  };
  return {
    beforeRecord: async (result) => {
      if (first) await into(result, enqueueAnchor(deps, input));
    },
    afterRecord: async (result) => {
      if (alongside) await into(result, alongside);
    },
  };
}

/** The sign's answer (the anchor's state is added by `anchoring`), with the asset's lifetime. */
function resultOf(
  deps: PipelineDeps,
  request: SignRequest,
  accepted: AcceptedUpload,
  manifestId: string,
  produced: Produced,
): { result: SignResult; createdAt: Date; expiresAt: Date } {
  const { assetId } = request;
  const { watermark, watermarkNotEmbedded } = produced;
  const createdAt = new Date();
  const expiresAt = new Date(createdAt.getTime() + Math.max(1, accepted.recipe.derivedAssetDays) * DAY_MS);
  const result: SignResult = {
    assetId,
    watermarkId: watermark?.id ?? '',
    manifestId,
    manifestUri: manifestUrl(deps.publicBaseUrl, manifestId),
    verifierUrl: verifierPageUrl(deps.publicBaseUrl, assetId),
    assetUrl: assetContentUrl(deps.publicBaseUrl, assetId),
    mediaType: accepted.sniffed.mediaType,
    createdAt: createdAt.toISOString(),
    expiresAt: expiresAt.toISOString(),
    ...(watermarkNotEmbedded
      ? { warnings: ['watermark_not_embedded'], watermarkNotEmbeddedReason: watermarkNotEmbedded }
      : {}),
  };
  return { result, createdAt, expiresAt };
}
