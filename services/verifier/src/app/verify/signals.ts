import { createHash } from 'node:crypto';
import { isCairnError } from '@cairn/errors';
import { checkOcsp, ocspUrlsOfCertificate } from '@cairn/ocsp';
import { anchorBatchStates, isoTimestamp } from '@cairn/proto';
import type { C2paReading } from '../../domain/c2pa/types.js';
import type { AnchorEvidence, FingerprintEvidence, OcspEvidence } from '../../domain/evidence.js';
import { chainLeadsToOneOf } from './chain-answers.js';
import type { VerifyDeps } from './deps.js';
import { SignalCache, type Epochs } from './signal-cache.js';

/**
 * OCSP is asked only about a chain that already validates to a trust anchor in force: the responder's address
 * comes from the certificate, so for any other file it is an address an uploader chose. The request goes
 * through the outbound address policy (no internal addresses, no redirects, short timeout, capped answer).
 */
export async function checkRevocation(
  deps: VerifyDeps,
  reading: C2paReading,
  epochs: Promise<Epochs>,
): Promise<OcspEvidence> {
  if (reading.kind !== 'manifest' || !reading.signatureValid || !reading.trusted) return 'not_checked';
  const [leaf, issuer] = reading.signer.certChainPem;
  if (!leaf || !issuer) return 'not_checked';
  const [url] = ocspUrlsOfCertificate(leaf);
  if (!url) return 'not_checked';
  // A kept answer is only ever about a Cairn certificate (below), whose revocation announces itself.
  const key = SignalCache.ocspKey(leaf, issuer, url);
  const inForce = await epochs;
  const kept = deps.signals.getOcsp(key, inForce, Date.now());
  if (kept) return kept;
  const answer = await checkOcsp(leaf, issuer, url, deps.ocspTimeoutMs, { policy: deps.outboundPolicy });
  if (answer.status === 'unavailable') deps.logger.info({ detail: answer.detail }, 'OCSP answer unavailable');
  else if (chainLeadsToOneOf(reading.signer.certChainPem, await deps.trust.cairnRoots()))
    deps.signals.setOcsp(key, answer.status, answer.nextUpdate, inForce, Date.now());
  return answer.status;
}

/**
 * The soft-binding signal: asked only when nothing stronger leads to a record (no manifest, no registered
 * watermark), for uploaded files of every modality. A tenant's verify sees its own matches; the public sees public fields.
 */
export async function lookupFingerprint(
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

/** Budget of the anchor check (the anchor service reads the chain once per batch, then answers from its cache). */
const ANCHOR_DEADLINE_MS = 5000;

/**
 * The anchor signal: the SHA-256 of the manifest store found in the file (the bytes anchoring committed to, as
 * served at manifest_uri) must be proved included in the root its batch's transaction carries on chain. The
 * anchor service does the proof and the chain read; only Cairn assets with a readable store are asked about.
 */
export async function checkAnchor(
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
    const status = anchorBatchStates.fromProto(answer.status);
    if (status === 'not_anchored') return { ran: false, reason: 'not_anchored' };
    if (status !== 'anchored') return { ran: false, reason: 'pending', detail: `batch ${status}` };
    const where = {
      ...(answer.txHash ? { txHash: answer.txHash } : {}),
      ...(answer.chainId ? { chainId: Number(answer.chainId) } : {}),
      ...(answer.blockNumber ? { blockNumber: Number(answer.blockNumber) } : {}),
      ...(answer.confirmedAt ? { confirmedAt: isoTimestamp(answer.confirmedAt) } : {}),
    };
    return answer.match
      ? { ran: true, match: true, ...where }
      : { ran: true, match: false, detail: answer.reason || 'mismatch', ...where };
  } catch (error) {
    deps.logger.warn({ err: error, asset_id: assetId }, 'anchor check failed');
    return { ran: false, reason: 'failed', detail: error instanceof Error ? error.message : String(error) };
  }
}
