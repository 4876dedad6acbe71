import { createHash } from 'node:crypto';
import { manifestUrl, verifierPageUrl } from '@cairn/config';
import { absentAsUndefined } from '@cairn/errors';
import { cairnLinkOf } from '../../domain/cairn-link.js';
import type { C2paReading } from '../../domain/c2pa/types.js';
import type { SigningKey, SoftMatch } from '../../domain/evidence.js';
import { chainLeadsToOneOf } from './chain-answers.js';
import type { PublicRecord } from '../ports.js';
import type { VerifyDeps } from './deps.js';

/**
 * The manifest of the Cairn asset whose signed file is exactly these bytes: an uploaded sidecar-signed file (a
 * text pasted back, say) is then verified against its manifest instead of only by fingerprint.
 */
export async function signedWithTheseBytes(deps: VerifyDeps, bytes: Buffer): Promise<string | undefined> {
  const contentSha256 = createHash('sha256').update(bytes).digest('hex');
  try {
    return (await deps.signer.findAssetByContent({ contentSha256 })).asset?.manifestId || undefined;
  } catch (error) {
    deps.logger.warn({ err: error }, 'could not look the upload up by content');
    return undefined;
  }
}

/** Cairn's public record of an asset (when it was signed, its manifest), or undefined when unknown. */
export async function publicAsset(deps: VerifyDeps, assetId: string | undefined): Promise<PublicRecord | undefined> {
  if (!assetId) return undefined;
  const kept = deps.signals.getRecord(assetId, Date.now());
  if (kept) return kept;
  try {
    const { asset } = await deps.signer.getPublicAsset({ assetId });
    if (!asset) return undefined;
    const record: PublicRecord = {
      assetId: asset.assetId,
      manifestId: asset.manifestId,
      ...(asset.createdAt ? { createdAt: asset.createdAt } : {}),
    };
    deps.signals.setRecord(record, Date.now());
    return record;
  } catch {
    return undefined;
  }
}

export function matchOf(deps: VerifyDeps, asset: PublicRecord, via: SoftMatch['via'], similarity: number): SoftMatch {
  return {
    assetId: asset.assetId,
    manifestUri: manifestUrl(deps.publicBaseUrl, asset.manifestId),
    verifierUrl: verifierPageUrl(deps.publicBaseUrl, asset.assetId),
    via,
    similarity,
  };
}

/**
 * A Cairn asset's record as the file's manifest leads to it, and whose key signed that manifest: Cairn's own
 * ('cairn'), or the signing tenant's (BYOK, 'tenant': the tenant proved it holds the key when it registered it, and
 * every signature was verified against it; the name in its certificate is the tenant's claim, not Cairn's).
 */
export interface LinkedRecord {
  assetId: string;
  manifestId: string;
  signingKey: SigningKey;
}

/**
 * Which Cairn asset these bytes belong to, and under which manifest, as far as Cairn's own signature says so
 * (domain/cairn-link.ts). A legacy manifest (no com.cairn.record), or one signed by a tenant's own key (BYOK),
 * counts only when it is, byte for byte, the store Cairn kept for the asset it names.
 */
export async function linkedRecord(deps: VerifyDeps, reading: C2paReading): Promise<LinkedRecord | undefined> {
  const signedByCairn =
    reading.kind === 'manifest' && chainLeadsToOneOf(reading.signer.certChainPem, await deps.trust.cairnRoots());
  const link = cairnLinkOf(reading, signedByCairn);
  if (!link) return undefined;
  if (link.kind === 'record') return { assetId: link.assetId, manifestId: link.manifestId, signingKey: 'cairn' };
  if (reading.kind !== 'manifest' || !reading.manifestStore) return undefined;
  const asset = await publicAsset(deps, link.assetId);
  if (!asset || (link.kind === 'claimed_record' && asset.manifestId !== link.manifestId)) return undefined;
  const kept = await deps.signer.getManifest({ manifestId: asset.manifestId }).catch(absentAsUndefined);
  return kept && Buffer.from(kept.manifestStore).equals(reading.manifestStore)
    ? {
        assetId: asset.assetId,
        manifestId: asset.manifestId,
        // A store Cairn kept and signed with a key that is not Cairn's: a BYOK sign.
        signingKey: link.kind === 'legacy_title' ? 'cairn' : 'tenant',
      }
    : undefined;
}

/**
 * The record of a sidecar Cairn looked up itself (by the input's id, or by the exact SHA-256 of the bytes): Cairn
 * keeps it, so it was signed with Cairn's key when its chain leads to Cairn's root, with the tenant's own otherwise.
 */
export async function sidecarRecord(
  deps: VerifyDeps,
  manifestId: string,
  reading: Extract<C2paReading, { kind: 'manifest' }>,
): Promise<LinkedRecord | undefined> {
  const kept = await deps.signer.getManifest({ manifestId }).catch(absentAsUndefined);
  if (!kept?.assetId) return undefined;
  const signedByCairn = chainLeadsToOneOf(reading.signer.certChainPem, await deps.trust.cairnRoots());
  return { assetId: kept.assetId, manifestId, signingKey: signedByCairn ? 'cairn' : 'tenant' };
}
