import { createHash } from 'node:crypto';
import type { GenService } from '@bufbuild/protobuf/codegenv2';
import type { BlobStore } from '@cairn/blob';
import { newEvent } from '@cairn/events';
import { withTenant, type Database } from '@cairn/db';
import { absentAsUndefined, CairnError, isCairnError } from '@cairn/errors';
import type { Logger } from '@cairn/logging';
import {
  checkMediaLimits,
  isSidecarMediaType,
  probeImage,
  sniffMediaType,
  SNIFF_BYTES,
  type MediaLimits,
  type Modality,
} from '@cairn/media';
import { checkOcsp, ocspUrlsOfCertificate } from '@cairn/ocsp';
import type { DestinationPolicy } from '@cairn/outbound';
import type { anchorV1, signerV1, softbindingV1, verifierV1, watermarkV1 } from '@cairn/proto';
import type { ServiceClient } from '@cairn/rpc';
import type { Outbox } from '@cairn/runtime';
import type { C2paReading, ManifestReader } from './c2pa/index.js';
import type {
  AnchorEvidence,
  FingerprintEvidence,
  OcspEvidence,
  SoftMatch,
  WatermarkEvidence,
} from './domain/evidence.js';
import { cairnLinkOf } from './domain/cairn-link.js';
import { manifestEvidence } from './domain/from-reading.js';
import { decide, type Verdict } from './domain/verdict.js';
import type { TrustLists } from './store/trust.js';

type SignerMethods = typeof signerV1.SignerService extends GenService<infer M> ? M : never;
type WatermarkMethods = typeof watermarkV1.WatermarkService extends GenService<infer M> ? M : never;
type SoftBindingMethods = typeof softbindingV1.SoftBindingService extends GenService<infer M> ? M : never;
type AnchorMethods = typeof anchorV1.AnchorService extends GenService<infer M> ? M : never;

export interface VerifyDeps {
  db: Database;
  blobs: BlobStore;
  reader: ManifestReader;
  signer: ServiceClient<SignerMethods>;
  watermark: ServiceClient<WatermarkMethods>;
  softbinding: ServiceClient<SoftBindingMethods>;
  anchor: ServiceClient<AnchorMethods>;
  trust: TrustLists;
  outbox: Outbox;
  logger: Logger;
  publicBaseUrl: string;
  ocspTimeoutMs: number;
  /** Where OCSP requests may go (the outbound address policy): never to an internal address a file names. */
  outboundPolicy: DestinationPolicy;
  /** What a verify decodes at most (here, in the watermark service and in the soft-binding service). */
  mediaLimits: MediaLimits;
}

export interface VerifyOutcome {
  verdict: Verdict;
  modality: Modality;
  manifestId?: string;
  assetId?: string;
  verifiedAt: string;
  /** When Cairn's copy of the file named by the input stops being kept (asset_id / manifest_uri inputs). */
  expiresAt?: string;
  /** The asset's anchor batch is not confirmed yet: the verdict will change when it is. */
  anchorPending: boolean;
}

interface Subject {
  bytes: Buffer;
  /** Set when the file is an upload (the soft-binding service reads it from the blob store). */
  uploadBlobKey?: string;
  /** When the file is a Cairn asset known by id (asset_id or manifest_uri input). */
  assetId?: string;
  manifestId?: string;
  expiresAt?: Date;
}

/** Resolves the three kinds of input to the bytes to verify. manifest_uri is only ever Cairn's own store. */
async function resolveSubject(deps: VerifyDeps, request: verifierV1.VerifyRequest): Promise<Subject> {
  const input = request.input;
  if (input.case === 'uploadBlobKey') {
    const bytes = await deps.blobs.getBuffer(input.value);
    if (!bytes) throw new CairnError('cairn.verify.no_input', 'The upload is gone; send the file again.');
    return { bytes, uploadBlobKey: input.value };
  }
  if (input.case === 'assetId') {
    if (!request.tenantId) throw new CairnError('cairn.not_found', `Asset ${input.value} not found.`);
    const { asset } = await deps.signer.getAsset({ tenantId: request.tenantId, assetId: input.value });
    if (!asset || asset.expired || !asset.blobKey)
      throw new CairnError(
        'cairn.not_found',
        `The file of asset ${input.value} is no longer kept (its retention ended).`,
      );
    const bytes = await deps.blobs.getBuffer(asset.blobKey);
    if (!bytes) throw new CairnError('cairn.not_found', `The file of asset ${input.value} is no longer kept.`);
    return { bytes, assetId: asset.assetId, manifestId: asset.manifestId, expiresAt: new Date(asset.expiresAt) };
  }
  if (input.case === 'manifestUri') {
    const manifestId = ownManifestId(deps.publicBaseUrl, input.value);
    if (!manifestId) {
      throw new CairnError(
        'cairn.validation.invalid_body',
        `manifest_uri must be a Cairn manifest URL (${deps.publicBaseUrl.replace(/\/$/, '')}/v1/manifests/<id>); other hosts are not fetched.`,
        {
          errors: [{ path: 'manifest_uri', message: 'not a Cairn manifest URL' }],
        },
      );
    }
    const manifest = await deps.signer.getManifest({ manifestId });
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
      ...(manifest.expiresAt ? { expiresAt: new Date(manifest.expiresAt) } : {}),
    };
  }
  throw new CairnError(
    'cairn.verify.no_input',
    'Send exactly one of: a file (multipart field "file"), asset_id, or manifest_uri.',
  );
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

/** What the watermark service answered for an image or an audio file, as evidence. */
interface DetectAnswer {
  applicable: boolean;
  detected: boolean;
  payloadHex: string;
  confidence: number;
  registered: boolean;
  assetId: string;
  watermarkId: string;
  keyless?: boolean;
  /** Set by the watermark service when it compared the content itself (cairn-sync-v2, after undoing the geometry). */
  contentConsistent?: boolean;
}

/**
 * One watermark detection through the watermark service, which decodes the file itself under its own limits (no
 * pixels or samples on the wire). A file it cannot read is "not applicable"; an outage is a failed signal.
 */
async function detectMark(
  deps: VerifyDeps,
  what: string,
  detect: () => Promise<DetectAnswer>,
  notApplicable: string,
): Promise<WatermarkEvidence> {
  try {
    const found = await detect();
    if (!found.applicable) return { ran: false, reason: 'not_applicable', detail: notApplicable };
    if (!found.detected) return { ran: true, detected: false };
    return {
      ran: true,
      detected: true,
      payloadHex: found.payloadHex,
      confidence: found.confidence,
      registered: found.registered,
      ...(found.assetId ? { assetId: found.assetId } : {}),
      ...(found.watermarkId ? { watermarkId: found.watermarkId } : {}),
      ...(found.keyless ? { keyless: true } : {}),
      ...(found.contentConsistent === undefined ? {} : { contentConsistent: found.contentConsistent }),
    };
  } catch (error) {
    deps.logger.warn({ err: error }, `${what} watermark detection failed`);
    return { ran: false, reason: 'failed', detail: error instanceof Error ? error.message : String(error) };
  }
}

async function detectWatermark(deps: VerifyDeps, bytes: Buffer): Promise<WatermarkEvidence> {
  // Header only, to tell an image from bytes that merely look like one.
  if (!(await probeImage(bytes))) return { ran: false, reason: 'not_applicable', detail: 'image could not be decoded' };
  return detectMark(
    deps,
    'image',
    () => deps.watermark.detectImage({ encoded: bytes }, { deadlineMs: 30_000 }),
    'image too small',
  );
}

/** The audio watermark (cairn-audio-wm-v1). */
function detectAudioWatermark(deps: VerifyDeps, bytes: Buffer): Promise<WatermarkEvidence> {
  return detectMark(
    deps,
    'audio',
    () => deps.watermark.detectAudio({ encoded: bytes }, { deadlineMs: 60_000 }),
    'no decodable audio, or shorter than one repetition of the mark',
  );
}

/**
 * OCSP is asked only about a chain that already validates to a trust anchor in force: the responder's address
 * comes from the certificate, so for any other file it is an address an uploader chose. The request goes
 * through the outbound address policy (no internal addresses, no redirects, short timeout, capped answer).
 */
async function checkRevocation(deps: VerifyDeps, reading: C2paReading): Promise<OcspEvidence> {
  if (reading.kind !== 'manifest' || !reading.signatureValid || !reading.trusted) return 'not_checked';
  const [leaf, issuer] = reading.signer.certChainPem;
  if (!leaf || !issuer) return 'not_checked';
  const [url] = ocspUrlsOfCertificate(leaf);
  if (!url) return 'not_checked';
  const answer = await checkOcsp(leaf, issuer, url, deps.ocspTimeoutMs, { policy: deps.outboundPolicy });
  if (answer.status === 'unavailable') deps.logger.info({ detail: answer.detail }, 'OCSP answer unavailable');
  return answer.status;
}

/**
 * The soft-binding signal: asked only when nothing stronger leads to a record (no manifest, no registered
 * watermark), for uploaded files of every modality. A tenant's verify sees its own matches; the public sees public fields.
 */
async function lookupFingerprint(
  deps: VerifyDeps,
  tenantId: string,
  uploadBlobKey: string | undefined,
): Promise<FingerprintEvidence> {
  if (!uploadBlobKey) return { ran: false, reason: 'not_available' };
  try {
    const { matches } = await deps.softbinding.lookup(
      { tenantId, query: { case: 'uploadBlobKey', value: uploadBlobKey } },
      { deadlineMs: 20_000 },
    );
    return {
      ran: true,
      matches: matches.map((m) => ({
        assetId: m.assetId,
        manifestUri: m.manifestUri,
        verifierUrl: m.verifierUrl,
        via: 'fingerprint' as const,
        similarity: m.similarity,
      })),
    };
  } catch (error) {
    // A file that cannot be fingerprinted (too short, too flat, undecodable) is not a failed service.
    if (
      isCairnError(error) &&
      (error.code === 'cairn.validation.invalid_body' || error.code === 'cairn.verify.unsupported_file_type')
    ) {
      return { ran: false, reason: 'not_available', detail: error.message };
    }
    deps.logger.warn({ err: error }, 'soft-binding lookup failed');
    return { ran: false, reason: 'failed', detail: error instanceof Error ? error.message : String(error) };
  }
}

/**
 * A registered watermark names an asset, but a mark proves only that someone with the key embedded it (or copied
 * its signal): the content must also look like that asset. A cairn-sync-v2 mark is checked by the watermark
 * service itself, which knows the geometry it read the mark under and compares the picture, registered back, with
 * what the mark was embedded in (crops and rotations included; its answer is the evidence's contentConsistent).
 * Other marks do not survive geometry changes, so their content is compared by perceptual fingerprint (within the
 * lookup radius), asked across tenants with public fields only. Undefined when it cannot be told (the lookup
 * failed or the file has none).
 */
async function contentMatchesAsset(
  deps: VerifyDeps,
  uploadBlobKey: string,
  assetId: string,
): Promise<boolean | undefined> {
  try {
    const { matches } = await deps.softbinding.lookup(
      { tenantId: '', query: { case: 'uploadBlobKey', value: uploadBlobKey }, limit: 50 },
      { deadlineMs: 20_000 },
    );
    return matches.some((m) => m.assetId === assetId);
  } catch (error) {
    deps.logger.warn({ err: error }, 'soft-binding lookup for the watermark content check failed');
    return undefined;
  }
}

/** Budget of the anchor check (the anchor service reads the chain once per batch, then answers from its cache). */
const ANCHOR_DEADLINE_MS = 5000;

/**
 * The anchor signal: the SHA-256 of the manifest store found in the file (the bytes anchoring committed to, as
 * served at manifest_uri) must be proved included in the root its batch's transaction carries on chain. The
 * anchor service does the proof and the chain read; only Cairn assets with a readable store are asked about.
 */
async function checkAnchor(
  deps: VerifyDeps,
  reading: C2paReading,
  assetId: string | undefined,
): Promise<AnchorEvidence> {
  if (reading.kind !== 'manifest' || !reading.signatureValid || !assetId)
    return { ran: false, reason: 'not_available' };
  if (!reading.manifestStore)
    return {
      ran: false,
      reason: 'not_available',
      detail: 'the manifest store could not be extracted from this container',
    };
  const manifestDigest = createHash('sha256').update(reading.manifestStore).digest('hex');
  try {
    const answer = await deps.anchor.checkAnchor({ assetId, manifestDigest }, { deadlineMs: ANCHOR_DEADLINE_MS });
    if (answer.status === 'not_anchored') return { ran: false, reason: 'not_anchored' };
    if (answer.status !== 'anchored') return { ran: false, reason: 'pending', detail: `batch ${answer.status}` };
    const where = {
      ...(answer.txHash ? { txHash: answer.txHash } : {}),
      ...(answer.chainId ? { chainId: Number(answer.chainId) } : {}),
      ...(answer.blockNumber ? { blockNumber: Number(answer.blockNumber) } : {}),
      ...(answer.confirmedAt ? { confirmedAt: answer.confirmedAt } : {}),
    };
    return answer.match
      ? { ran: true, match: true, ...where }
      : { ran: true, match: false, detail: answer.reason || 'mismatch', ...where };
  } catch (error) {
    deps.logger.warn({ err: error, asset_id: assetId }, 'anchor check failed');
    return { ran: false, reason: 'failed', detail: error instanceof Error ? error.message : String(error) };
  }
}

/**
 * The manifest of the Cairn asset whose signed file is exactly these bytes: an uploaded sidecar-signed file (a
 * text pasted back, say) is then verified against its manifest instead of only by fingerprint.
 */
async function signedWithTheseBytes(deps: VerifyDeps, bytes: Buffer): Promise<string | undefined> {
  const contentSha256 = createHash('sha256').update(bytes).digest('hex');
  try {
    return (await deps.signer.findAssetByContent({ contentSha256 })).asset?.manifestId || undefined;
  } catch (error) {
    deps.logger.warn({ err: error }, 'could not look the upload up by content');
    return undefined;
  }
}

/** Cairn's public record of an asset (when it was signed, its manifest), or undefined when unknown. */
async function publicAsset(deps: VerifyDeps, assetId: string | undefined): Promise<signerV1.Asset | undefined> {
  if (!assetId) return undefined;
  try {
    return (await deps.signer.getPublicAsset({ assetId })).asset;
  } catch {
    return undefined;
  }
}

function matchOf(deps: VerifyDeps, asset: signerV1.Asset, via: SoftMatch['via'], similarity: number): SoftMatch {
  const base = deps.publicBaseUrl.replace(/\/$/, '');
  return {
    assetId: asset.assetId,
    manifestUri: `${base}/v1/manifests/${asset.manifestId}`,
    verifierUrl: `${base}/v/${asset.assetId}`,
    via,
    similarity,
  };
}

/**
 * Which Cairn asset these bytes belong to, and under which manifest, as far as Cairn's own signature says so
 * (domain/cairn-link.ts). A legacy manifest (no com.cairn.record), or one signed by a tenant's own key (BYOK),
 * counts only when it is, byte for byte, the store Cairn kept for the asset it names.
 */
async function linkedRecord(
  deps: VerifyDeps,
  reading: C2paReading,
): Promise<{ assetId: string; manifestId: string } | undefined> {
  const link = cairnLinkOf(reading, await deps.trust.cairnRoots());
  if (!link) return undefined;
  if (link.kind === 'record') return { assetId: link.assetId, manifestId: link.manifestId };
  if (reading.kind !== 'manifest' || !reading.manifestStore) return undefined;
  const asset = await publicAsset(deps, link.assetId);
  if (!asset || (link.kind === 'claimed_record' && asset.manifestId !== link.manifestId)) return undefined;
  const kept = await deps.signer.getManifest({ manifestId: asset.manifestId }).catch(absentAsUndefined);
  return kept && Buffer.from(kept.manifestStore).equals(reading.manifestStore)
    ? { assetId: asset.assetId, manifestId: asset.manifestId }
    : undefined;
}

/**
 * Gathers every signal (C2PA in an isolated reader, watermark, then OCSP and the anchor check together; the
 * soft-binding lookup when nothing stronger leads to a record), decides and, for a tenant, emits the event.
 * Nothing here is stored: what a file's uploader is told never changes what others are told about an asset
 * (app/stored-verdict.ts computes that from Cairn's own copy).
 */
export async function verify(deps: VerifyDeps, request: verifierV1.VerifyRequest): Promise<VerifyOutcome> {
  const subject = await resolveSubject(deps, request);
  const sniffed = sniffMediaType(subject.bytes.subarray(0, SNIFF_BYTES));
  if (!sniffed) {
    throw new CairnError(
      'cairn.verify.unsupported_file_type',
      'This file type is not supported for verification; send an image (JPEG, PNG, WebP), audio (WAV, MP3, FLAC, OGG), video (MP4, WebM) or UTF-8 text.',
    );
  }
  // A file declaring more than the limits (a decompression bomb) is refused before anything decodes it.
  await checkMediaLimits(subject.bytes, sniffed, deps.mediaLimits);
  const trust = await deps.trust.forTenant(request.tenantId || undefined);
  // Text, OGG and WebM carry no manifest: Cairn's sidecar is validated against the file when the input names the
  // asset or manifest; an uploaded one has none to read and goes to the fingerprint lookup.
  const sidecarType = isSidecarMediaType(sniffed.mediaType);
  const sidecarManifestId = sidecarType
    ? (subject.manifestId ?? (await signedWithTheseBytes(deps, subject.bytes)))
    : undefined;
  const sidecar = sidecarManifestId
    ? (await deps.signer.getManifest({ manifestId: sidecarManifestId })).manifestStore
    : undefined;
  const [reading, watermark] = await Promise.all([
    sidecarType && !sidecar
      ? Promise.resolve<C2paReading>({ kind: 'none' })
      : deps.reader.readManifest({
          asset: subject.bytes,
          mimeType: sniffed.mediaType,
          trustAnchorsPem: trust.pems,
          allowRemoteFetch: false,
          ...(sidecar ? { sidecar: Buffer.from(sidecar) } : {}),
        }),
    sniffed.modality === 'image'
      ? detectWatermark(deps, subject.bytes)
      : sniffed.modality === 'audio'
        ? detectAudioWatermark(deps, subject.bytes)
        : Promise.resolve<WatermarkEvidence>({ ran: false, reason: 'not_applicable' }),
  ]);

  // The asset and manifest the file's own manifest belongs to, under Cairn's signature only. A sidecar was found
  // by Cairn itself (by id or by the file's exact hash), so it names its record.
  const linked =
    sidecarManifestId && reading.kind === 'manifest'
      ? await sidecarRecord(deps, sidecarManifestId)
      : await linkedRecord(deps, reading);
  const [ocsp, anchor] = await Promise.all([
    checkRevocation(deps, reading),
    checkAnchor(deps, reading, linked?.assetId),
  ]);

  // Which Cairn asset is this? Known from the input or the signed record; else the watermark registry points to one.
  const manifestAssetId = subject.assetId ?? linked?.assetId;
  const markedAssetId = watermark.ran && watermark.detected && watermark.registered ? watermark.assetId : undefined;
  // A watermark-only lead must also be the asset's content, not merely carry its mark.
  let watermarkEvidence = watermark;
  if (
    watermark.ran &&
    watermark.detected &&
    watermark.registered &&
    watermark.contentConsistent === undefined &&
    reading.kind !== 'manifest' &&
    markedAssetId &&
    subject.uploadBlobKey
  ) {
    const consistent = await contentMatchesAsset(deps, subject.uploadBlobKey, markedAssetId);
    watermarkEvidence = { ...watermark, ...(consistent === undefined ? {} : { contentConsistent: consistent }) };
  }
  // A mark on other content (copied) names no asset.
  const watermarkAssetId =
    watermarkEvidence.ran && watermarkEvidence.detected && watermarkEvidence.contentConsistent === false
      ? undefined
      : markedAssetId;
  const assetId = manifestAssetId ?? (reading.kind === 'manifest' ? undefined : watermarkAssetId);
  const record = await publicAsset(deps, assetId);
  const match =
    watermarkEvidence.ran && watermarkEvidence.detected && watermarkEvidence.registered && record && !manifestAssetId
      ? matchOf(deps, record, 'watermark', watermarkEvidence.confidence)
      : undefined;
  const manifestId = subject.manifestId ?? linked?.manifestId;
  const evidence = manifestEvidence(reading, {
    ...(manifestId ? { manifestId } : {}),
    ...(manifestAssetId ? { assetId: manifestAssetId } : {}),
  });
  // Without a trusted time-stamp the manifest carries no signing time; for Cairn's own assets the signer's
  // record of when it signed is the authority.
  if (evidence.kind === 'manifest' && !evidence.signedAt && record && manifestId && record.manifestId === manifestId)
    evidence.signedAt = record.createdAt;

  const verdict = decide({
    manifest: evidence,
    ocsp,
    watermark: watermarkEvidence,
    fingerprint:
      reading.kind === 'manifest' || (watermark.ran && watermark.detected && watermark.registered)
        ? { ran: false, reason: 'not_available' }
        : await lookupFingerprint(deps, request.tenantId, subject.uploadBlobKey),
    anchor,
    ...(match ? { watermarkMatch: match } : {}),
  });
  const verifiedAt = new Date().toISOString();

  if (request.tenantId) {
    await withTenant(deps.db, request.tenantId, (tx) =>
      deps.outbox.enqueue(
        tx,
        newEvent('asset.verified', request.tenantId, {
          status: verdict.status,
          confidence: verdict.confidence,
          manifest_id: manifestId ?? null,
          asset_id: assetId ?? null,
          media_type: sniffed.mediaType,
          ...(sniffed.modality === 'text' ? {} : { 'billing.meter': `${sniffed.modality}_verify` }),
        }),
      ),
    );
    void deps.outbox.flush();
  }
  return {
    verdict,
    modality: sniffed.modality,
    ...(manifestId ? { manifestId } : {}),
    ...(assetId ? { assetId } : {}),
    verifiedAt,
    ...(subject.expiresAt ? { expiresAt: subject.expiresAt.toISOString() } : {}),
    anchorPending: !anchor.ran && anchor.reason === 'pending',
  };
}

/** The record of a sidecar Cairn looked up itself (by the input's id, or by the exact SHA-256 of the bytes). */
async function sidecarRecord(
  deps: VerifyDeps,
  manifestId: string,
): Promise<{ assetId: string; manifestId: string } | undefined> {
  const kept = await deps.signer.getManifest({ manifestId }).catch(absentAsUndefined);
  return kept?.assetId ? { assetId: kept.assetId, manifestId } : undefined;
}
