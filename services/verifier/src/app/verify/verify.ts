import { newEvent } from '@cairn/events';
import { CairnError } from '@cairn/errors';
import { checkMediaLimits, isSidecarMediaType, sniffMediaType, SNIFF_BYTES, type SniffedType } from '@cairn/media';
import { isoTimestamp, type verifierV1 } from '@cairn/proto';
import { inSpan } from '@cairn/telemetry';
import type { C2paReading, ReadManifestInput } from '../../domain/c2pa/types.js';
import type { AnchorEvidence, OcspEvidence, SoftMatch, WatermarkEvidence } from '../../domain/evidence.js';
import { manifestEvidence } from '../../domain/from-reading.js';
import { crJsonReport } from '../../domain/c2pa/crjson.js';
import { listThatTrusts, type ListInForce, type TrustListIdentity } from '../../domain/trust-decision.js';
import { decide, type Verdict } from '../../domain/verdict.js';
import type { PublicRecord } from '../ports.js';
import { chainLeadsToOneOf } from './chain-answers.js';
import type { VerifyDeps, VerifyOutcome } from './deps.js';
import {
  linkedRecord,
  matchOf,
  publicAsset,
  sidecarRecord,
  signedWithTheseBytes,
  type LinkedRecord,
} from './records.js';
import { checkAnchor, checkRevocation, lookupFingerprint } from './signals.js';
import { ReadingMemo } from './reading-memo.js';
import { resolveSubject, type Subject } from './subject.js';
import { contentMatchesAsset, detectStreamWatermark, detectWatermark } from './watermark.js';

/**
 * A verify in the steps its story reads: gather every signal (C2PA in an isolated reader, watermark, then OCSP and
 * the anchor check together), identify which Cairn asset the file is, decide (the soft-binding lookup when nothing
 * stronger leads to a record), explain (the crJSON report, when asked) and, for a tenant, record the event.
 * Nothing here is stored: what a file's uploader is told never changes what others are told about an asset
 * (app/stored-verdict.ts computes that from Cairn's own copy).
 */
export async function verify(
  deps: VerifyDeps,
  request: verifierV1.VerifyRequest,
  options: { report?: boolean } = {},
): Promise<VerifyOutcome> {
  const gathered = await gather(deps, request);
  const identity = await identify(deps, gathered);
  const { verdict, trustedBy } = await decideVerdict(deps, request, gathered, identity);
  const verifiedAt = new Date().toISOString();
  const report = options.report || request.includeReport ? explain(gathered, trustedBy, verifiedAt) : undefined;
  if (request.tenantId) await record(deps, request, gathered, identity, verdict);
  const { subject, sniffed, anchor } = gathered;
  const { manifestId, assetId } = identity;
  return {
    verdict,
    modality: sniffed.modality,
    ...(manifestId ? { manifestId } : {}),
    ...(assetId ? { assetId } : {}),
    verifiedAt,
    ...(subject.expiresAt ? { expiresAt: subject.expiresAt.toISOString() } : {}),
    anchorPending: !anchor.ran && anchor.reason === 'pending',
    ...(report ? { report } : {}),
  };
}

/** The file, what it is, the trust lists in force, and every signal read from it. */
interface Gathered {
  subject: Subject;
  sniffed: SniffedType;
  trust: TrustInForce;
  /** The manifest Cairn keeps for a sidecar-signed file (by the input's id, or by the file's exact hash). */
  sidecarManifestId: string | undefined;
  reading: C2paReading;
  linked: LinkedRecord | undefined;
  ocsp: OcspEvidence;
  anchor: AnchorEvidence;
  /** The public record of the asset the input or the manifest names. */
  knownRecord: PublicRecord | undefined;
  watermark: WatermarkEvidence;
}

type TrustInForce = Awaited<ReturnType<VerifyDeps['trust']['forTenant']>>;

/** Gather: the file (refused first when it is not one Cairn verifies), the trust lists, then every signal. */
async function gather(deps: VerifyDeps, request: verifierV1.VerifyRequest): Promise<Gathered> {
  // The trust list in force depends only on who asks: read while the file is fetched and checked, and awaited
  // after, so a refused file still answers its own error first.
  const trustInForce = inSpan('verify.trust', () => deps.trust.forTenant(request.tenantId || undefined));
  // Dropped on this branch only: the promise itself is awaited below; this keeps its failure from going
  // unobserved (an unhandled rejection) when the file's own error ends the verify first.
  trustInForce.catch(() => undefined);
  // The event tokens kept answers are checked against: read before any of those calls is asked (signal-cache.ts).
  const epochs = inSpan('verify.epochs', () => deps.signalEpochs.current());
  const subject = await inSpan('verify.subject', () => resolveSubject(deps, request));
  const sniffed = sniffMediaType(subject.bytes.subarray(0, SNIFF_BYTES));
  if (!sniffed) {
    throw new CairnError(
      'cairn.verify.unsupported_file_type',
      'This file type is not supported for verification; send an image (JPEG, PNG, WebP), audio (WAV, MP3, FLAC, OGG), video (MP4, WebM) or UTF-8 text.',
    );
  }
  // A file declaring more than the limits (a decompression bomb) is refused before anything decodes it.
  await inSpan('verify.limits', () => checkMediaLimits(subject.bytes, sniffed, deps.mediaLimits));
  const trust = await trustInForce;
  // Text, OGG and WebM carry no manifest: Cairn's sidecar is validated against the file when the input names the
  // asset or manifest; an uploaded one has none to read and goes to the fingerprint lookup.
  const sidecarType = isSidecarMediaType(sniffed.mediaType);
  const sidecarManifestId = sidecarType
    ? (subject.manifestId ?? (await signedWithTheseBytes(deps, subject.bytes)))
    : undefined;
  const sidecar = sidecarManifestId
    ? (await deps.signer.getManifest({ manifestId: sidecarManifestId })).manifestStore
    : undefined;
  const readingInput: ReadManifestInput | undefined =
    sidecarType && !sidecar
      ? undefined
      : {
          asset: subject.bytes,
          mimeType: sniffed.mediaType,
          trustAnchorsPem: trust.pems,
          allowRemoteFetch: false,
          ...(sidecar ? { sidecar: Buffer.from(sidecar) } : {}),
        };
  const signals = await gatherSignals(deps, { subject, sniffed, sidecarManifestId, readingInput, epochs });
  return { subject, sniffed, trust, sidecarManifestId, ...signals };
}

/**
 * The signals: the C2PA reading and what follows from it (its record, OCSP, the anchor, the asset's public
 * record), beside the watermark detection.
 */
async function gatherSignals(
  deps: VerifyDeps,
  file: {
    subject: Subject;
    sniffed: SniffedType;
    sidecarManifestId: string | undefined;
    readingInput: ReadManifestInput | undefined;
    epochs: ReturnType<VerifyDeps['signalEpochs']['current']>;
  },
): Promise<Pick<Gathered, 'reading' | 'linked' | 'ocsp' | 'anchor' | 'knownRecord' | 'watermark'>> {
  const { subject, sniffed, sidecarManifestId, readingInput, epochs } = file;
  // Cairn's own signed file (read by asset or manifest id, as the stored verdict does): its C2PA reading and its
  // watermark reading are kept for a verify of the very same bytes (reading-memo.ts, the watermark service's memo).
  const cairnCopy = subject.uploadBlobKey === undefined;
  const readingKey = readingInput ? ReadingMemo.keyOf(readingInput) : undefined;
  const keptReading = readingKey ? deps.readings.get(readingKey, Date.now()) : undefined;
  // A kept reading means Cairn signed these bytes and read them lately: the watermark service most likely keeps
  // its reading too, and is asked by digest first (no file on the wire, no header probe).
  const watermarkDetection: Promise<WatermarkEvidence> =
    sniffed.modality === 'image'
      ? inSpan('verify.watermark', () =>
          detectWatermark(deps, subject.bytes, { cairnCopy, byDigest: keptReading !== undefined }),
        )
      : sniffed.modality === 'audio' || sniffed.modality === 'video'
        ? detectStreamWatermark(deps, sniffed.modality, subject.bytes)
        : Promise.resolve<WatermarkEvidence>({ ran: false, reason: 'not_applicable' });
  // What follows from the manifest alone (its record, OCSP, the anchor, the asset's public record) starts as soon as
  // the reading is there, while the watermark detection (the slower signal) still runs: none of it waits for the
  // mark, so a verify takes about as long as its slowest signal rather than the sum of both chains.
  const fromManifest = (async () => {
    const reading: C2paReading =
      !readingInput || !readingKey
        ? { kind: 'none' }
        : (keptReading ?? (await inSpan('verify.c2pa', () => readC2pa(deps, readingInput, readingKey, cairnCopy))));
    // The asset and manifest the file's own manifest belongs to, under Cairn's signature only. A sidecar was found
    // by Cairn itself (by id or by the file's exact hash), so it names its record.
    // OCSP needs the reading only (the slowest of these calls): asked before the record link is worked out.
    const revocation = inSpan('verify.ocsp', () => checkRevocation(deps, reading, epochs));
    // Dropped on this branch only: awaited below; this keeps a failure from going unobserved if the link fails first.
    revocation.catch(() => undefined);
    const linked =
      sidecarManifestId && reading.kind === 'manifest'
        ? await sidecarRecord(deps, sidecarManifestId, reading)
        : await inSpan('verify.linked', () => linkedRecord(deps, reading));
    const knownAssetId = subject.assetId ?? linked?.assetId;
    const [ocsp, anchor, knownRecord] = await Promise.all([
      revocation,
      inSpan('verify.anchor', () => checkAnchor(deps, reading, linked?.assetId)),
      // The manifest names the asset: its public record is needed whatever the watermark says.
      knownAssetId ? inSpan('verify.record', () => publicAsset(deps, knownAssetId)) : Promise.resolve(undefined),
    ]);
    return { reading, linked, ocsp, anchor, knownRecord };
  })();
  const [manifestSignals, watermark] = await Promise.all([fromManifest, watermarkDetection]);
  return { ...manifestSignals, watermark };
}

/** Which Cairn asset the file is, and what leads to it. */
interface Identity {
  /** The asset the input or the signed record names. */
  manifestAssetId: string | undefined;
  /** The asset the verify names: the manifest's, else the one a watermark on the asset's own content leads to. */
  assetId: string | undefined;
  manifestId: string | undefined;
  /** That asset's public record. */
  record: PublicRecord | undefined;
  /** The watermark signal, with whether the content is the marked asset's when that was checked here. */
  watermark: WatermarkEvidence;
  /** The record a watermark alone leads to. */
  match: SoftMatch | undefined;
}

/**
 * Identify: which Cairn asset is this? Known from the input or the signed record; else the watermark registry
 * points to one, when the content is the asset's own.
 */
async function identify(deps: VerifyDeps, gathered: Gathered): Promise<Identity> {
  const { subject, linked, reading, watermark, knownRecord } = gathered;
  const manifestAssetId = subject.assetId ?? linked?.assetId;
  const markedAssetId = watermark.ran && watermark.detected && watermark.registered ? watermark.assetId : undefined;
  // A watermark-only lead must also be the asset's content, not merely carry its mark. The watermark service's own
  // check settles a yes; its no (an image's picture, placed through the mark's geometry, unlike the asset's: also an
  // honest copy with a caption bar or a logo over a smooth sky) and its silence are asked of the content's
  // fingerprints, which a transplant onto other content does not match.
  let watermarkEvidence = watermark;
  if (
    watermark.ran &&
    watermark.detected &&
    watermark.registered &&
    watermark.contentConsistent !== true &&
    reading.kind !== 'manifest' &&
    markedAssetId &&
    subject.uploadBlobKey
  ) {
    const consistent = await contentMatchesAsset(deps, subject.uploadBlobKey, markedAssetId, gathered.sniffed.modality);
    watermarkEvidence = { ...watermark, ...(consistent === undefined ? {} : { contentConsistent: consistent }) };
  }
  // A mark on other content (copied) names no asset.
  const watermarkAssetId =
    watermarkEvidence.ran && watermarkEvidence.detected && watermarkEvidence.contentConsistent === false
      ? undefined
      : markedAssetId;
  const assetId = manifestAssetId ?? (reading.kind === 'manifest' ? undefined : watermarkAssetId);
  const record =
    assetId === undefined
      ? undefined
      : assetId === manifestAssetId
        ? knownRecord
        : await inSpan('verify.record', () => publicAsset(deps, assetId));
  const match =
    watermarkEvidence.ran && watermarkEvidence.detected && watermarkEvidence.registered && record && !manifestAssetId
      ? matchOf(deps, record, 'watermark', watermarkEvidence.confidence)
      : undefined;
  const manifestId = subject.manifestId ?? linked?.manifestId;
  return { manifestAssetId, assetId, manifestId, record, watermark: watermarkEvidence, match };
}

/**
 * Decide: the evidence, signal by signal (the soft-binding lookup only when neither a manifest nor a registered
 * mark leads to a record), judged by the decision table (domain/verdict.ts).
 */
async function decideVerdict(
  deps: VerifyDeps,
  request: verifierV1.VerifyRequest,
  gathered: Gathered,
  identity: Identity,
): Promise<{ verdict: Verdict; trustedBy: TrustListIdentity | undefined }> {
  const { reading, linked, ocsp, anchor, watermark, subject, trust } = gathered;
  const { manifestId, manifestAssetId, record, match } = identity;
  const trustedBy = trustingList(reading, trust.lists);
  const evidence = manifestEvidence(reading, {
    ...(trustedBy ? { trustedBy: trustedBy.list } : {}),
    ...(manifestId ? { manifestId } : {}),
    ...(manifestAssetId ? { assetId: manifestAssetId } : {}),
    // Known only for the manifest Cairn kept for an asset; a file merely naming an asset says nothing of the key.
    ...(linked ? { signingKey: linked.signingKey } : {}),
  });
  // Without a trusted time-stamp the manifest carries no signing time; for Cairn's own assets the signer's
  // record of when it signed is the authority.
  if (evidence.kind === 'manifest' && !evidence.signedAt && record && manifestId && record.manifestId === manifestId)
    evidence.signedAt = record.createdAt ? isoTimestamp(record.createdAt) : undefined;

  const verdict = decide({
    manifest: evidence,
    ocsp,
    watermark: identity.watermark,
    fingerprint:
      reading.kind === 'manifest' || (watermark.ran && watermark.detected && watermark.registered)
        ? { ran: false, reason: 'not_available' }
        : await lookupFingerprint(deps, request.tenantId, subject.uploadBlobKey),
    anchor,
    ...(match ? { watermarkMatch: match } : {}),
  });
  return { verdict, trustedBy };
}

/** Explain: the crJSON validation report of the reading the verdict came from. */
function explain(
  gathered: Gathered,
  trustedBy: TrustListIdentity | undefined,
  verifiedAt: string,
): VerifyOutcome['report'] {
  return crJsonReport(gathered.reading, {
    validationTime: verifiedAt,
    generator: REPORT_GENERATOR,
    trust: { decidedBy: trustedBy ?? null, inForce: gathered.trust.lists.map((l) => l.identity) },
  });
}

/** Record: asset.verified for the tenant that asked (billing meters it, webhooks announce it). */
async function record(
  deps: VerifyDeps,
  request: verifierV1.VerifyRequest,
  gathered: Gathered,
  identity: Identity,
  verdict: Verdict,
): Promise<void> {
  const { sniffed } = gathered;
  // The event is the only row a verify writes: a statement of its own, not a transaction.
  await inSpan('verify.event', () =>
    deps.outbox.enqueueAlone(
      newEvent('asset.verified', request.tenantId, {
        status: verdict.status,
        confidence: verdict.confidence,
        manifest_id: identity.manifestId ?? null,
        asset_id: identity.assetId ?? null,
        media_type: sniffed.mediaType,
        ...(sniffed.modality === 'text' ? {} : { 'billing.meter': `${sniffed.modality}_verify` }),
        ...(request.reservationId ? { reservation_id: request.reservationId } : {}),
      }),
    ),
  );
}

/** Who writes the reports: this verifier, reading with c2pa-rs 0.90.1 through c2pa-node 0.8.0. */
const REPORT_GENERATOR = { name: 'Cairn verifier (c2pa-rs 0.90.1)', version: '0.1.0' } as const;

/** The list whose anchor a trusted signer chains to (official lists before the frozen interim one). */
function trustingList(reading: C2paReading, lists: readonly ListInForce[]): TrustListIdentity | undefined {
  if (reading.kind !== 'manifest' || !reading.trusted) return undefined;
  return listThatTrusts(lists, (roots) => chainLeadsToOneOf(reading.signer.certChainPem, roots));
}

/** The C2PA reading of the file, in the isolated reader; kept for Cairn's own copies (reading-memo.ts). */
async function readC2pa(
  deps: VerifyDeps,
  input: ReadManifestInput,
  key: string,
  cairnCopy: boolean,
): Promise<C2paReading> {
  const reading = await deps.reader.readManifest(input);
  if (cairnCopy) deps.readings.set(key, reading, Date.now());
  return reading;
}
