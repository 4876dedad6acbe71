import { X509Certificate } from 'node:crypto';
import type { C2paReading } from './c2pa/types.js';

/**
 * Which Cairn asset a manifest belongs to, decided only by Cairn's own signature: the claim signature and every
 * assertion hash verify, the signer's chain leads to one of Cairn's roots (not merely to a trust anchor in force,
 * which an enterprise tenant may set), and the signed `com.cairn.record` assertion names the asset. A title, a file
 * name or a watermark never makes this link: anyone can write those.
 */
export type CairnLink =
  | { kind: 'record'; assetId: string; manifestId: string }
  /**
   * A Cairn-signed manifest from before `com.cairn.record`: its signed title names the asset. The caller must
   * confirm it by comparing the manifest store with the one Cairn kept for that asset, byte for byte.
   */
  | { kind: 'legacy_title'; assetId: string }
  /**
   * A record assertion under another signature (a tenant's own key, BYOK): it counts only when the manifest store
   * in the file is, byte for byte, the one Cairn kept for that manifest.
   */
  | { kind: 'claimed_record'; assetId: string; manifestId: string };

const LEGACY_TITLE = /^(a_[0-9A-HJKMNP-TV-Z]{26})\.[a-z0-9]{1,8}$/;

/**
 * `signedByCairn`: whether the signer's chain leads to one of Cairn's roots (`chainsToOneOf`, asked and remembered
 * by the caller, app/verify/chain-answers.ts); it matters only for a manifest whose signature and assertions hold.
 */
export function cairnLinkOf(reading: C2paReading, signedByCairn: boolean): CairnLink | undefined {
  if (reading.kind !== 'manifest' || !reading.signatureValid || !reading.assertionsValid) return undefined;
  const record = reading.claims.cairnRecord;
  if (!signedByCairn) return record ? { kind: 'claimed_record', ...record } : undefined;
  if (record) return { kind: 'record', ...record };
  const legacy = LEGACY_TITLE.exec(reading.claims.title ?? '')?.[1];
  return legacy ? { kind: 'legacy_title', assetId: legacy } : undefined;
}

/**
 * The chain (leaf first, as carried in the COSE x5chain) is signed link by link, and its last certificate is one
 * of the roots or was issued and signed by one. c2pa-rs has already checked the claim signature with the leaf.
 */
export function chainsToOneOf(chainPem: readonly string[], rootsPem: readonly string[]): boolean {
  if (chainPem.length === 0 || rootsPem.length === 0) return false;
  let chain: X509Certificate[];
  let roots: X509Certificate[];
  try {
    chain = chainPem.map((pem) => new X509Certificate(pem));
    roots = rootsPem.map((pem) => new X509Certificate(pem));
  } catch {
    return false;
  }
  for (let i = 0; i + 1 < chain.length; i++) {
    if (!issuedBy(chain[i]!, chain[i + 1]!)) return false;
  }
  const last = chain[chain.length - 1]!;
  return roots.some((root) => last.raw.equals(root.raw) || issuedBy(last, root));
}

function issuedBy(child: X509Certificate, issuer: X509Certificate): boolean {
  try {
    return child.checkIssued(issuer) && child.verify(issuer.publicKey);
  } catch {
    return false;
  }
}
