// From what c2pa-node reported (Reader JSON, or the error it threw) to a C2paReading. Pure: runs in the
// reader child, and directly in tests.
import { X509Certificate } from 'node:crypto';
import { claimsOf, softBindingsOf } from './claims.js';
import { coseCertificateChain, signatureCose } from './jumbf.js';
import { judgeCodes } from './status-codes.js';
import { parseStoreJson, type SignatureInfoJson } from './store-json.js';
import type { C2paReading, ManifestReading, SignerInfo } from './types.js';

export interface StoreReport {
  /** What `reader.json()` returned. */
  storeJson: unknown;
  /** JUMBF bytes found in the container, if the format is one asset-store.ts can walk. */
  manifestStore: Buffer | null;
  thumbnail?: { mimeType: string; bytes: Buffer };
}

const MAX_DETAIL = 300;

function clip(text: string): string {
  return text.length > MAX_DETAIL ? `${text.slice(0, MAX_DETAIL)}…` : text;
}

function derToPem(der: Uint8Array): string {
  const b64 = Buffer.from(der)
    .toString('base64')
    .replace(/.{1,64}/g, '$&\n');
  return `-----BEGIN CERTIFICATE-----\n${b64}-----END CERTIFICATE-----\n`;
}

function decimalToHex(decimal: string | undefined): string | undefined {
  if (!decimal || !/^\d+$/.test(decimal)) return undefined;
  return BigInt(decimal).toString(16);
}

function subjectField(subject: string, field: string): string | undefined {
  const line = subject.split('\n').find((l) => l.startsWith(`${field}=`));
  return line?.slice(field.length + 1);
}

function signerInfo(chainDer: Uint8Array[], info: SignatureInfoJson): SignerInfo {
  const signer: SignerInfo = { certChainPem: chainDer.map(derToPem) };
  const leafDer = chainDer[0];
  if (leafDer) {
    try {
      const leaf = new X509Certificate(Buffer.from(leafDer));
      signer.commonName = subjectField(leaf.subject, 'CN');
      signer.organization = subjectField(leaf.subject, 'O');
      signer.serialHex = leaf.serialNumber.toLowerCase().replace(/^0+(?=.)/, '');
      signer.notBefore = new Date(leaf.validFrom).toISOString();
      signer.notAfter = new Date(leaf.validTo).toISOString();
    } catch {
      // An unparsable leaf is c2pa-rs's to judge (signingCredential.invalid); fall back to its summary.
    }
  }
  signer.commonName ??= info.commonName;
  signer.organization ??= info.issuer;
  signer.serialHex ??= decimalToHex(info.certSerialNumber);
  for (const key of ['commonName', 'organization', 'serialHex', 'notBefore', 'notAfter'] as const) {
    if (signer[key] === undefined) delete signer[key];
  }
  return signer;
}

function chainOf(store: Buffer | null, label: string): Uint8Array[] {
  if (!store) return [];
  try {
    const cose = signatureCose(store, label);
    return cose ? coseCertificateChain(cose) : [];
  } catch {
    return [];
  }
}

export function readingFromStore(report: StoreReport): C2paReading {
  let parsed;
  try {
    parsed = parseStoreJson(report.storeJson);
  } catch (error) {
    return { kind: 'malformed', detail: clip(`unreadable manifest report: ${String(error)}`) };
  }
  const { active, activeLabel, entries, validationState } = parsed;
  if (!active || !activeLabel) {
    // A store c2pa-rs could open but with no usable active manifest is a store that cannot be parsed.
    const codes = entries.filter((e) => e.kind === 'failure').map((e) => e.code);
    return { kind: 'malformed', detail: clip(`no active manifest${codes.length ? `: ${codes.join(', ')}` : ''}`) };
  }
  const verdict = judgeCodes(entries, validationState);
  const softBindings = softBindingsOf(active.assertions);
  const validationCodes = [
    ...new Set(entries.filter((e) => e.scope === 'active' && e.kind !== 'success').map((e) => e.code)),
  ];
  const reading: ManifestReading = {
    kind: 'manifest',
    activeLabel,
    validationState,
    ...verdict,
    signer: signerInfo(chainOf(report.manifestStore, activeLabel), active.signatureInfo),
    claims: claimsOf(active),
    softBindings,
    validationCodes,
    validationEntries: entries,
    manifestStore: report.manifestStore,
  };
  if (active.signatureInfo.time) reading.signedAt = active.signatureInfo.time;
  if (softBindings[0]) reading.softBinding = softBindings[0];
  if (report.thumbnail) reading.thumbnail = report.thumbnail;
  return reading;
}

export type ErrorVerdict = { type: 'reading'; reading: C2paReading } | { type: 'settings'; detail: string };

/**
 * c2pa-node rejects with an Error whose `name` is the Rust error's Debug form, e.g.
 * `C2pa(RemoteManifestUrl("https://…"))`, `C2pa(InvalidAsset("Boxes are too deply nested…"))`.
 */
export function readingFromError(name: string, message: string, mimeType: string): ErrorVerdict {
  if (/Invalid settings/.test(message)) return { type: 'settings', detail: clip(message) };
  const variant = /^C2pa\((\w+)/.exec(name)?.[1];
  switch (variant) {
    case 'RemoteManifestUrl':
    case 'RemoteManifestFetch': {
      const url = /"(https?:\/\/[^"\\]+)/.exec(name)?.[1] ?? /(https?:\/\/\S+)/.exec(message)?.[1] ?? '';
      return { type: 'reading', reading: { kind: 'remote', url, fetched: false } };
    }
    case 'UnsupportedType':
      return { type: 'reading', reading: { kind: 'unsupported', mimeType } };
    case 'JumbfNotFound':
    case 'ProvenanceMissing':
      return { type: 'reading', reading: { kind: 'none' } };
    default:
      return { type: 'reading', reading: { kind: 'malformed', detail: clip(`${variant ?? name}: ${message}`) } };
  }
}
