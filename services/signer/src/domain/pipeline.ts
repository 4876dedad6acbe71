import { createHash, X509Certificate } from 'node:crypto';
import type { BlobStore } from '@cairn/blob';
import { newEvent } from '@cairn/events';
import { withTenant, type Database, type Tx } from '@cairn/db';
import { CairnError } from '@cairn/errors';
import { newId } from '@cairn/ids';
import { checkMediaLimits, sniffMediaType, SNIFF_BYTES, type MediaLimits } from '@cairn/media';
import type { anchorV1, signerV1, watermarkV1 } from '@cairn/proto';
import type { ServiceClient } from '@cairn/rpc';
import type { Logger } from '@cairn/logging';
import type { Outbox } from '@cairn/runtime';
import type { GenService } from '@bufbuild/protobuf/codegenv2';
import {
  buildAndSign,
  C2paInputError,
  C2paSignError,
  isEmbeddableMimeType,
  isSidecarMimeType,
  type SignableMimeType,
} from '../c2pa/index.js';
import type { IsolatedC2pa } from '../c2pa/isolated.js';
import { c2paSignerFailure, createC2paSigner, type CertificateAuthority } from '../pki/index.js';
import type { Credentials } from '../app/credentials.js';
import type { AssetStore } from '../store/assets.js';
import { decodeImage, encodeImage, makeThumbnail, MIN_IMAGE_SIDE, type ImageMediaType } from './image.js';
import { parseSignMetadata } from './metadata.js';

type WatermarkMethods = typeof watermarkV1.WatermarkService extends GenService<infer M> ? M : never;
type AnchorMethods = typeof anchorV1.AnchorService extends GenService<infer M> ? M : never;
export type SignRequest = signerV1.SignRequest;
export type SignResult = Omit<signerV1.SignResponse, '$typeName' | '$unknown' | 'anchor'> & {
  anchor?: { batchId: string; status: string };
};

export interface PipelineDeps {
  db: Database;
  blobs: BlobStore;
  outbox: Outbox;
  store: AssetStore;
  authority: CertificateAuthority;
  watermark: ServiceClient<WatermarkMethods>;
  /** Tenants' own signing credentials (BYOK); absent: a sign that names one is refused. */
  credentials?: Pick<Credentials, 'activeKey'>;
  /** Enqueues manifest digests for anchoring (recipes with the anchor layer); absent: no anchoring. */
  anchor?: ServiceClient<AnchorMethods>;
  logger?: Logger;
  /** C2PA signing in child processes (the service always sets it); absent: in this process (unit tests, tools). */
  c2pa?: IsolatedC2pa;
  publicBaseUrl: string;
  /** What a sign decodes at most; refused from the headers (cairn.media.too_large) before anything is decoded. */
  mediaLimits: MediaLimits;
  version: string;
  /** Seconds spent per pipeline stage (decode, watermark, encode, c2pa, store, record), for /metrics. */
  observeStage?: (stage: SignStage, seconds: number) => void;
}

export type SignStage = 'read' | 'decode' | 'watermark' | 'encode' | 'c2pa' | 'store' | 'record';

async function timed<T>(deps: PipelineDeps, stage: SignStage, work: () => Promise<T>): Promise<T> {
  const started = process.hrtime.bigint();
  try {
    return await work();
  } finally {
    deps.observeStage?.(stage, Number(process.hrtime.bigint() - started) / 1e9);
  }
}

const IMAGE_TYPES: ReadonlySet<string> = new Set(['image/jpeg', 'image/png', 'image/webp']);
/** A text generation event is text, not a document archive: larger uploads are refused. */
const MAX_TEXT_BYTES = 5 * 1024 * 1024;

function isWellFormedUtf8(bytes: Buffer): boolean {
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    return true;
  } catch {
    return false;
  }
}

/** Signed as uploaded, with an embedded manifest. */
const AS_UPLOADED_TYPES: ReadonlySet<string> = new Set(['audio/wav', 'audio/mpeg', 'audio/flac', 'video/mp4']);

/**
 * An audio or video upload is signed as it is; c2pa-rs refuses a container it cannot parse, which is the upload's fault
 * (a truncated or mislabelled file), so that is a 400, never a 500. A key backend's failure reaches here as its
 * own error (503), not as a C2paSignError.
 */
async function signAsUploaded<T>(
  upload: Buffer,
  mimeType: SignableMimeType,
  sign: (input: { asset: Buffer; mimeType: SignableMimeType }) => Promise<T>,
): Promise<T> {
  try {
    return await sign({ asset: upload, mimeType });
  } catch (error) {
    if (error instanceof C2paInputError || error instanceof C2paSignError) {
      throw new CairnError(
        'cairn.sign.unsupported_mime',
        `The file looks like ${mimeType} but its container cannot be read (${error.message}).`,
      );
    }
    throw error;
  }
}
const DAY_MS = 86_400_000;

function signerNameOf(certificatePem: string): string {
  const subject = new X509Certificate(certificatePem).subject;
  const field = (name: string) =>
    subject
      .split('\n')
      .find((l) => l.startsWith(`${name}=`))
      ?.slice(name.length + 1);
  return [field('O'), field('CN')].filter(Boolean).join(' — ') || subject;
}

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
 */
export async function signAsset(
  deps: PipelineDeps,
  request: SignRequest,
  onCommitted?: (tx: Tx, result: SignResult) => Promise<void>,
): Promise<SignResult> {
  const recipe = request.recipe;
  if (!recipe) throw new CairnError('cairn.sign.invalid_recipe', 'The recipe is missing.');
  const metadata = parseSignMetadata(request.metadata);
  const upload = await timed(deps, 'read', () => deps.blobs.getBuffer(request.uploadBlobKey));
  if (!upload) throw new CairnError('cairn.validation.invalid_body', 'The upload is gone; send the asset again.');
  const sniffed = sniffMediaType(upload.subarray(0, SNIFF_BYTES));
  if (!sniffed || !recipe.mediaTypes.includes(sniffed.mediaType)) {
    throw new CairnError(
      'cairn.sign.unsupported_mime',
      `${sniffed ? `This file is ${sniffed.mediaType} (by its content)` : 'This file’s type is not recognised'}; recipe ${recipe.recipeId} accepts ${recipe.mediaTypes.join(', ')}.`,
    );
  }
  // Before any parser or decoder allocates: what the headers declare (pixels, duration) against the limits.
  const probe = await timed(deps, 'decode', () => checkMediaLimits(upload, sniffed, deps.mediaLimits));
  let signed: { signed: Buffer; manifestStore: Buffer; manifestLabel: string };
  let watermark: { id: string; payloadHex: string; algorithm: string } | undefined;
  const assetId = request.assetId;
  // Known before signing: the manifest names its own id and asset in the signed com.cairn.record assertion.
  const manifestId = newId('manifest');
  // Bring your own key: the tenant's chain, signed by its own endpoint; otherwise Cairn's active key.
  const active = request.signingCredentialId
    ? await (deps.credentials ?? noCredentials()).activeKey(request.tenantId, request.signingCredentialId)
    : await deps.authority.activeSigningKey();
  const c2paSigner = createC2paSigner(active);
  const sign = (input: { asset: Buffer; mimeType: SignableMimeType; thumbnail?: Buffer }) =>
    timed(deps, 'c2pa', () => {
      const plan = {
        asset: input.asset,
        mimeType: input.mimeType,
        claimGenerator: { name: 'cairn' as const, version: deps.version },
        title: `${assetId}.${sniffed.extension}`,
        record: { assetId, manifestId },
        ...(recipe.digitalSourceType ? { digitalSourceType: recipe.digitalSourceType } : {}),
        metadata,
        ...(watermark ? { softBinding: { alg: watermark.algorithm, value: watermark.payloadHex } } : {}),
        ...(input.thumbnail ? { thumbnail: { bytes: input.thumbnail, mimeType: 'image/jpeg' as const } } : {}),
      };
      // The upload's container is parsed and rewritten by c2pa-rs in a child process; the key signs here.
      return deps.c2pa ? deps.c2pa.buildAndSign(plan, active) : buildAndSign({ ...plan, signer: c2paSigner });
    }).catch((error: unknown) => {
      // c2pa-rs replaces a key backend's error with its own; the signer kept ours (503, not 500).
      throw c2paSignerFailure(c2paSigner) ?? error;
    });

  if (sniffed.modality === 'text') {
    // A text generation event: the UTF-8 bytes are kept as they are and bound by a sidecar manifest.
    if (!isSidecarMimeType(sniffed.mediaType))
      throw new CairnError(
        'cairn.sign.unsupported_mime',
        `Signing ${sniffed.mediaType} is not available; plain UTF-8 text is.`,
      );
    if (upload.length > MAX_TEXT_BYTES)
      throw new CairnError(
        'cairn.validation.invalid_body',
        `Text to sign is at most ${MAX_TEXT_BYTES / 1024 / 1024} MiB (this is ${upload.length} bytes).`,
      );
    if (!isWellFormedUtf8(upload))
      throw new CairnError('cairn.sign.unsupported_mime', 'The text is not valid UTF-8; send UTF-8 text.');
    signed = await sign({ asset: upload, mimeType: sniffed.mediaType });
  } else if (sniffed.modality === 'audio' || sniffed.modality === 'video') {
    // Audio and video are signed in their own container: the manifest is embedded in it, or, for OGG and WebM,
    // kept beside it as a sidecar bound to the file's bytes. Audio carries the watermark when the recipe asks
    // (video has none yet).
    const mimeType = sniffed.mediaType;
    if (!(AS_UPLOADED_TYPES.has(mimeType) && isEmbeddableMimeType(mimeType)) && !isSidecarMimeType(mimeType)) {
      throw new CairnError(
        'cairn.sign.unsupported_mime',
        `Signing ${mimeType} is not available; WAV, MP3, FLAC, OGG, MP4 and WebM are.`,
      );
    }
    if (sniffed.modality === 'audio' && recipe.watermark) {
      // The watermark service decodes the upload (under its own limits), marks it with a key that never leaves
      // it, and answers the file re-encoded in the same container and quality; that file is what gets signed.
      const watermarkId = newId('watermark');
      const marked = await timed(deps, 'watermark', () =>
        deps.watermark.embedAudio(
          { tenantId: request.tenantId, watermarkId, assetId, encoded: upload },
          { deadlineMs: 120_000 },
        ),
      );
      if (marked.encoded.length === 0 || marked.mediaType !== mimeType)
        throw new CairnError('cairn.internal_error', 'The watermark service returned no audio in the upload’s format.');
      watermark = { id: watermarkId, payloadHex: marked.payloadHex, algorithm: marked.algorithm };
      signed = await signAsUploaded(Buffer.from(marked.encoded), mimeType, sign);
    } else {
      signed = await signAsUploaded(upload, mimeType, sign);
    }
  } else {
    if (!IMAGE_TYPES.has(sniffed.mediaType)) {
      throw new CairnError(
        'cairn.sign.unsupported_mime',
        `Signing ${sniffed.modality} is not available yet on this deployment; images (JPEG, PNG, WebP), audio (WAV, MP3, FLAC), video (MP4) and text are.`,
      );
    }
    const mediaType = sniffed.mediaType as ImageMediaType;
    if (!probe?.width || !probe.height)
      throw new CairnError('cairn.sign.unsupported_mime', `The file looks like ${mediaType} but cannot be decoded.`);
    if (Math.min(probe.width, probe.height) < MIN_IMAGE_SIDE) {
      throw new CairnError(
        'cairn.validation.invalid_body',
        `Images must be at least ${MIN_IMAGE_SIDE}×${MIN_IMAGE_SIDE} pixels to carry a watermark (this one is ${probe.width}×${probe.height}).`,
      );
    }
    if (recipe.watermark) {
      // The watermark service decodes the upload once (under its own limits), marks it with a key that never
      // leaves it, and answers the file encoded once plus the thumbnail: no raw pixels cross the wire.
      const watermarkId = newId('watermark');
      const marked = await timed(deps, 'watermark', () =>
        deps.watermark.embedImage(
          { tenantId: request.tenantId, watermarkId, assetId, encoded: upload },
          { deadlineMs: 60_000 },
        ),
      );
      if (marked.encoded.length === 0 || marked.thumbnail.length === 0)
        throw new CairnError('cairn.internal_error', 'The watermark service returned no image.');
      watermark = { id: watermarkId, payloadHex: marked.payloadHex, algorithm: marked.algorithm };
      signed = await sign({
        asset: Buffer.from(marked.encoded),
        mimeType: mediaType,
        thumbnail: Buffer.from(marked.thumbnail),
      });
    } else {
      let image;
      try {
        image = await timed(deps, 'decode', () => decodeImage(upload, mediaType, deps.mediaLimits.imagePixels));
      } catch {
        throw new CairnError('cairn.sign.unsupported_mime', `The file looks like ${mediaType} but cannot be decoded.`);
      }
      const plain = image;
      const [encoded, thumbnail] = await timed(deps, 'encode', () =>
        Promise.all([encodeImage(plain, mediaType), makeThumbnail(plain)]),
      );
      signed = await sign({ asset: encoded, mimeType: mediaType, thumbnail });
    }
  }
  const mediaType = sniffed.mediaType;

  const assetKey = `${request.tenantId}/assets/${assetId}.${sniffed.extension}`;
  const manifestKey = `manifests/${manifestId}.c2pa`;
  const [stored] = await timed(deps, 'store', () =>
    Promise.all([
      deps.blobs.put(assetKey, signed.signed, { contentType: mediaType }),
      deps.blobs.put(manifestKey, signed.manifestStore, { contentType: 'application/c2pa' }),
    ]),
  );

  // What anchoring commits to: SHA-256 of the manifest store bytes, as served at manifest_uri.
  const manifestDigest = createHash('sha256').update(signed.manifestStore).digest('hex');
  const createdAt = new Date();
  const expiresAt = new Date(createdAt.getTime() + Math.max(1, recipe.derivedAssetDays) * DAY_MS);
  const base = deps.publicBaseUrl.replace(/\/$/, '');
  const result: SignResult = {
    assetId,
    watermarkId: watermark?.id ?? '',
    manifestId,
    manifestUri: `${base}/v1/manifests/${manifestId}`,
    verifierUrl: `${base}/v/${assetId}`,
    assetUrl: `${base}/v1/assets/${assetId}/content`,
    mediaType,
    createdAt: createdAt.toISOString(),
    expiresAt: expiresAt.toISOString(),
  };
  const signerName = signerNameOf(active.certificatePem);
  // A job's result is committed with its asset (onCommitted), so its anchor must be known first: the digest is
  // enqueued before the record. Should the record then fail, the leaf names a manifest nobody holds (harmless) and
  // a retry signs under a new manifest id. A synchronous sign enqueues after its commit.
  const anchorFirst = onCommitted !== undefined && recipe.anchor && deps.anchor !== undefined;
  if (anchorFirst) {
    const anchor = await enqueueAnchor(deps, { tenantId: request.tenantId, assetId, manifestId, manifestDigest });
    if (anchor) result.anchor = anchor;
  }
  try {
    await timed(deps, 'record', () =>
      withTenant(deps.db, request.tenantId, async (tx) => {
        await deps.store.insertSigned(
          tx,
          {
            assetId,
            tenantId: request.tenantId,
            recipeId: recipe.recipeId,
            mediaType,
            sizeBytes: stored.size,
            contentSha256: stored.sha256,
            uploadSha256: createHash('sha256').update(upload).digest('hex'),
            watermarkId: watermark?.id ?? null,
            watermarkPayload: watermark?.payloadHex ?? null,
            manifestId,
            blobKey: assetKey,
            metadata: { ...metadata },
            signerName,
            certificateSerial: active.serialHex,
            createdAt,
            expiresAt,
          },
          {
            manifestId,
            assetId,
            tenantId: request.tenantId,
            blobKey: manifestKey,
            label: signed.manifestLabel,
            sizeBytes: signed.manifestStore.length,
            createdAt,
          },
        );
        const common = {
          asset_id: assetId,
          manifest_id: manifestId,
          recipe_id: recipe.recipeId,
          media_type: mediaType,
          'billing.meter': recipe.meter,
        };
        await deps.outbox.enqueue(
          tx,
          newEvent('asset.signed', request.tenantId, {
            ...common,
            blob_key: assetKey,
            watermark_id: watermark?.id ?? null,
            watermark_payload: watermark?.payloadHex ?? null,
            manifest_uri: result.manifestUri,
            verifier_url: result.verifierUrl,
            content_sha256: stored.sha256,
            soft_binding: recipe.softBinding,
            anchor: recipe.anchor,
            // The anchor service also consumes this (idempotently), so a digest whose Enqueue call failed is anchored anyway.
            ...(recipe.anchor ? { manifest_digest: manifestDigest } : {}),
          }),
        );
        await deps.outbox.enqueue(
          tx,
          newEvent('manifest.signed', request.tenantId, {
            manifest_id: manifestId,
            asset_id: assetId,
            recipe: recipe.recipeId,
            status: 'signed',
          }),
        );
        if (onCommitted) await onCommitted(tx, result);
      }),
    );
  } catch (error) {
    // Nothing refers to the blobs if the record did not commit.
    await Promise.allSettled([deps.blobs.delete(assetKey), deps.blobs.delete(manifestKey)]);
    throw error;
  }
  void deps.outbox.flush();
  if (recipe.anchor && deps.anchor && !anchorFirst) {
    const anchor = await enqueueAnchor(deps, { tenantId: request.tenantId, assetId, manifestId, manifestDigest });
    if (anchor) result.anchor = anchor;
  }
  return result;
}

/**
 * Anchoring never fails a sign: the asset is signed and recorded already. When the anchor service does not answer,
 * the result carries no `anchor` and a warning is logged; the asset.signed event (with the digest) still reaches
 * the anchor service, which enqueues it then, so the manifest is anchored all the same.
 */
async function enqueueAnchor(
  deps: PipelineDeps,
  input: { tenantId: string; assetId: string; manifestId: string; manifestDigest: string },
): Promise<{ batchId: string; status: string } | undefined> {
  try {
    const queued = await deps.anchor!.enqueue(input, { deadlineMs: 3000 });
    return { batchId: queued.batchId, status: queued.status };
  } catch (error) {
    deps.logger?.warn(
      { err: error, asset_id: input.assetId, manifest_id: input.manifestId },
      'anchor service unavailable; the manifest is anchored from asset.signed instead',
    );
    return undefined;
  }
}
