import { createHash } from 'node:crypto';
import type { GenService } from '@bufbuild/protobuf/codegenv2';
import type { BlobStore } from '@cairn/blob';
import { newEvent } from '@cairn/bus';
import { withTenant, type Database } from '@cairn/db';
import { CairnError, isCairnError } from '@cairn/errors';
import type { Logger } from '@cairn/logging';
import { decodeRgb, isSidecarMediaType, sniffMediaType, SNIFF_BYTES, type Modality } from '@cairn/media';
import { checkOcsp, ocspUrlsOfCertificate } from '@cairn/ocsp';
import type { anchorV1, signerV1, softbindingV1, verifierV1, watermarkV1 } from '@cairn/proto';
import type { ServiceClient } from '@cairn/rpc';
import type { Outbox } from '@cairn/runtime';
import type { C2paReading, ManifestReader } from './c2pa/index.js';
import type { AnchorEvidence, FingerprintEvidence, OcspEvidence, SoftMatch, WatermarkEvidence } from './domain/evidence.js';
import { manifestEvidence } from './domain/from-reading.js';
import { decide, type Verdict } from './domain/verdict.js';
import type { ResultStore } from './store/results.js';
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
  results: ResultStore;
  outbox: Outbox;
  logger: Logger;
  publicBaseUrl: string;
  ocspTimeoutMs: number;
}

export interface VerifyOutcome {
  verdict: Verdict;
  modality: Modality;
  manifestId?: string;
  assetId?: string;
  verifiedAt: string;
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

const ASSET_IN_TITLE = /^(a_[0-9A-HJKMNP-TV-Z]{26})\./;
const DEFAULT_RESULT_TTL_MS = 86_400_000;

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
    if (!asset || asset.expired || !asset.blobKey) throw new CairnError('cairn.not_found', `The file of asset ${input.value} is no longer kept (its retention ended).`);
    const bytes = await deps.blobs.getBuffer(asset.blobKey);
    if (!bytes) throw new CairnError('cairn.not_found', `The file of asset ${input.value} is no longer kept.`);
    return { bytes, assetId: asset.assetId, manifestId: asset.manifestId, expiresAt: new Date(asset.expiresAt) };
  }
  if (input.case === 'manifestUri') {
    const manifestId = ownManifestId(deps.publicBaseUrl, input.value);
    if (!manifestId) {
      throw new CairnError('cairn.validation.invalid_body', `manifest_uri must be a Cairn manifest URL (${deps.publicBaseUrl.replace(/\/$/, '')}/v1/manifests/<id>); other hosts are not fetched.`, {
        errors: [{ path: 'manifest_uri', message: 'not a Cairn manifest URL' }],
      });
    }
    const manifest = await deps.signer.getManifest({ manifestId });
    const bytes = manifest.assetBlobKey ? await deps.blobs.getBuffer(manifest.assetBlobKey) : null;
    if (!bytes) throw new CairnError('cairn.not_found', `The file signed under manifest ${manifestId} is no longer kept (its retention ended).`);
    return { bytes, assetId: manifest.assetId, manifestId, ...(manifest.expiresAt ? { expiresAt: new Date(manifest.expiresAt) } : {}) };
  }
  throw new CairnError('cairn.verify.no_input', 'Send exactly one of: a file (multipart field "file"), asset_id, or manifest_uri.');
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

async function detectWatermark(deps: VerifyDeps, bytes: Buffer): Promise<WatermarkEvidence> {
  const image = await decodeRgb(bytes, 100_000_000);
  if (!image) return { ran: false, reason: 'not_applicable', detail: 'image could not be decoded' };
  if (Math.min(image.width, image.height) < 64) return { ran: false, reason: 'not_applicable', detail: 'image too small' };
  try {
    const found = await deps.watermark.detectImage({ image }, { deadlineMs: 30_000 });
    if (!found.detected) return { ran: true, detected: false };
    return { ran: true, detected: true, payloadHex: found.payloadHex, confidence: found.confidence, registered: found.registered, ...(found.assetId ? { assetId: found.assetId } : {}), ...(found.watermarkId ? { watermarkId: found.watermarkId } : {}) };
  } catch (error) {
    deps.logger.warn({ err: error }, 'watermark detection failed');
    return { ran: false, reason: 'failed', detail: error instanceof Error ? error.message : String(error) };
  }
}

async function checkRevocation(deps: VerifyDeps, reading: C2paReading): Promise<OcspEvidence> {
  if (reading.kind !== 'manifest' || !reading.signatureValid) return 'not_checked';
  const [leaf, issuer] = reading.signer.certChainPem;
  if (!leaf || !issuer) return 'not_checked';
  const [url] = ocspUrlsOfCertificate(leaf);
  if (!url) return 'not_checked';
  const answer = await checkOcsp(leaf, issuer, url, deps.ocspTimeoutMs);
  return answer.status;
}

/**
 * The soft-binding signal: asked only when nothing stronger leads to a record (no manifest, no registered
 * watermark), for uploaded files of every modality. A tenant's verify sees its own matches; the public sees public fields.
 */
async function lookupFingerprint(deps: VerifyDeps, tenantId: string, uploadBlobKey: string | undefined): Promise<FingerprintEvidence> {
  if (!uploadBlobKey) return { ran: false, reason: 'not_available' };
  try {
    const { matches } = await deps.softbinding.lookup({ tenantId, query: { case: 'uploadBlobKey', value: uploadBlobKey } }, { deadlineMs: 20_000 });
    return { ran: true, matches: matches.map((m) => ({ assetId: m.assetId, manifestUri: m.manifestUri, verifierUrl: m.verifierUrl, via: 'fingerprint' as const, similarity: m.similarity })) };
  } catch (error) {
    // A file that cannot be fingerprinted (too short, too flat, undecodable) is not a failed service.
    if (isCairnError(error) && (error.code === 'cairn.validation.invalid_body' || error.code === 'cairn.verify.unsupported_file_type')) {
      return { ran: false, reason: 'not_available', detail: error.message };
    }
    deps.logger.warn({ err: error }, 'soft-binding lookup failed');
    return { ran: false, reason: 'failed', detail: error instanceof Error ? error.message : String(error) };
  }
}

/** Budget of the anchor check (the anchor service reads the chain once per batch, then answers from its cache). */
const ANCHOR_DEADLINE_MS = 5000;

/**
 * The anchor signal: the SHA-256 of the manifest store found in the file (the bytes anchoring committed to, as
 * served at manifest_uri) must be proved included in the root its batch's transaction carries on chain. The
 * anchor service does the proof and the chain read; only Cairn assets with a readable store are asked about.
 */
async function checkAnchor(deps: VerifyDeps, reading: C2paReading, assetId: string | undefined): Promise<AnchorEvidence> {
  if (reading.kind !== 'manifest' || !reading.signatureValid || !assetId) return { ran: false, reason: 'not_available' };
  if (!reading.manifestStore) return { ran: false, reason: 'not_available', detail: 'the manifest store could not be extracted from this container' };
  const manifestDigest = createHash('sha256').update(reading.manifestStore).digest('hex');
  try {
    const answer = await deps.anchor.checkAnchor({ assetId, manifestDigest }, { deadlineMs: ANCHOR_DEADLINE_MS });
    if (answer.status === 'not_anchored') return { ran: false, reason: 'not_anchored' };
    if (answer.status !== 'anchored') return { ran: false, reason: 'pending', detail: `batch ${answer.status}` };
    const where = { ...(answer.txHash ? { txHash: answer.txHash } : {}), ...(answer.chainId ? { chainId: Number(answer.chainId) } : {}), ...(answer.blockNumber ? { blockNumber: Number(answer.blockNumber) } : {}), ...(answer.confirmedAt ? { confirmedAt: answer.confirmedAt } : {}) };
    return answer.match ? { ran: true, match: true, ...where } : { ran: true, match: false, detail: answer.reason || 'mismatch', ...where };
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
  return { assetId: asset.assetId, manifestUri: `${base}/v1/manifests/${asset.manifestId}`, verifierUrl: `${base}/v/${asset.assetId}`, via, similarity };
}

/**
 * Gathers every signal (C2PA in an isolated reader, watermark, then OCSP and the anchor check together; the
 * soft-binding lookup when nothing stronger leads to a record), decides, records the result and, for a tenant, the event.
 */
export async function verify(deps: VerifyDeps, request: verifierV1.VerifyRequest): Promise<VerifyOutcome> {
  const subject = await resolveSubject(deps, request);
  const sniffed = sniffMediaType(subject.bytes.subarray(0, SNIFF_BYTES));
  if (!sniffed) {
    throw new CairnError('cairn.verify.unsupported_file_type', 'This file type is not supported for verification; send an image (JPEG, PNG, WebP), audio (WAV, MP3, FLAC, OGG), video (MP4, WebM) or UTF-8 text.');
  }
  const trust = await deps.trust.forTenant(request.tenantId || undefined);
  // Text, OGG and WebM carry no manifest: Cairn's sidecar is validated against the file when the input names the
  // asset or manifest; an uploaded one has none to read and goes to the fingerprint lookup.
  const sidecarType = isSidecarMediaType(sniffed.mediaType);
  const sidecarManifestId = sidecarType ? (subject.manifestId ?? (await signedWithTheseBytes(deps, subject.bytes))) : undefined;
  const sidecar = sidecarManifestId ? (await deps.signer.getManifest({ manifestId: sidecarManifestId })).manifestStore : undefined;
  const [reading, watermark] = await Promise.all([
    sidecarType && !sidecar
      ? Promise.resolve<C2paReading>({ kind: 'none' })
      : deps.reader.readManifest({ asset: subject.bytes, mimeType: sniffed.mediaType, trustAnchorsPem: trust.pems, allowRemoteFetch: false, ...(sidecar ? { sidecar: Buffer.from(sidecar) } : {}) }),
    sniffed.modality === 'image' ? detectWatermark(deps, subject.bytes) : Promise.resolve<WatermarkEvidence>({ ran: false, reason: 'not_applicable' }),
  ]);
  // The anchor is checked for the asset the manifest itself names (its signed title), else the input's asset.
  const titleAsset = reading.kind === 'manifest' ? ASSET_IN_TITLE.exec(reading.claims.title ?? '')?.[1] : undefined;
  const [ocsp, anchor] = await Promise.all([checkRevocation(deps, reading), checkAnchor(deps, reading, titleAsset ?? subject.assetId)]);

  // Which Cairn asset is this? Known from the input, else from the watermark registry or the manifest title.
  const assetId = subject.assetId ?? (watermark.ran && watermark.detected ? watermark.assetId : undefined) ?? titleAsset;
  const record = await publicAsset(deps, assetId);
  const match = watermark.ran && watermark.detected && watermark.registered && record ? matchOf(deps, record, 'watermark', watermark.confidence) : undefined;
  const manifestId = subject.manifestId ?? (reading.kind === 'manifest' ? record?.manifestId : undefined);
  const evidence = manifestEvidence(reading, { ...(manifestId ? { manifestId } : {}), ...(assetId ? { assetId } : {}) });
  // Without a trusted time-stamp the manifest carries no signing time; for Cairn's own assets the signer's
  // record of when it signed is the authority.
  if (evidence.kind === 'manifest' && !evidence.signedAt && record && record.manifestId === manifestId) evidence.signedAt = record.createdAt;

  const verdict = decide({
    manifest: evidence,
    ocsp,
    watermark,
    fingerprint:
      reading.kind === 'manifest' || (watermark.ran && watermark.detected && watermark.registered)
        ? { ran: false, reason: 'not_available' }
        : await lookupFingerprint(deps, request.tenantId, subject.uploadBlobKey),
    anchor,
    ...(match ? { watermarkMatch: match } : {}),
  });
  const verifiedAt = new Date().toISOString();

  if (manifestId && assetId && reading.kind === 'manifest') {
    const { matches: _omit, ...publicVerdict } = verdict;
    const expiresAt = subject.expiresAt ?? new Date(Date.now() + DEFAULT_RESULT_TTL_MS);
    await deps.results.save({ ...publicVerdict, manifest_id: manifestId, asset_id: assetId, verified_at: verifiedAt }, expiresAt).catch((error: unknown) => deps.logger.warn({ err: error }, 'could not store the verification result'));
  }
  if (request.tenantId) {
    await withTenant(deps.db, request.tenantId, (tx) =>
      deps.outbox.enqueue(tx, newEvent('asset.verified', request.tenantId, { status: verdict.status, confidence: verdict.confidence, manifest_id: manifestId ?? null, asset_id: assetId ?? null, media_type: sniffed.mediaType, ...(sniffed.modality === 'text' ? {} : { 'billing.meter': `${sniffed.modality}_verify` }) })),
    );
    void deps.outbox.flush();
  }
  return { verdict, modality: sniffed.modality, ...(manifestId ? { manifestId } : {}), ...(assetId ? { assetId } : {}), verifiedAt };
}
