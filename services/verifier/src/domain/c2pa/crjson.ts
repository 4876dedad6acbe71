// The C2PA validation report of a reading as a Content Credentials JSON (crJSON) document: the C2PA 2.4 JSON
// serialization of a manifest store with its validation results (schema: services/verifier/schemas/). c2pa-rs 0.90
// can write crJSON itself (Reader::cr_json), but c2pa-node 0.8 binds only the Reader's own JSON, so the document is
// built here from what the verifier kept of the read: the JUMBF store as found in the file (claims, assertions,
// signatures) and c2pa-rs's validation results and state. Pure; bounded by the store, which the reader bounded.
import { X509Certificate } from 'node:crypto';
import { childBoxes, findLabelled, manifestLabels, readBox, superboxLabel, type JumbfBox } from '@cairn/jumbf';
import { decodeCbor, isTagged, type CborValue } from './cbor.js';
import { coseCertificateChain, signatureCose } from './jumbf.js';
import { coseTimeStampToken } from './timestamp.js';
import type { C2paReading, ValidationEntry } from './types.js';
import type { TrustListIdentity } from '../trust-decision.js';

export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };
type JsonObject = { [key: string]: JsonValue };

/** Cairn's own terms in the document (JSON-LD: every term a crJSON consumer meets is defined in @context). */
export const CAIRN_VOCABULARY = 'https://docs.cairn.dev/crjson#';
/** The crJSON vocabulary, as c2pa-rs writes it in its own crJSON. */
const CRJSON_VOCABULARY = 'https://c2pa.org/crjson/';
/** The specification version c2pa-rs 0.90 reports in its crJSON validation results. */
export const VALIDATION_SPEC_VERSION = '2.3.0';
/** Assertion content boxes above this are reported as an empty object (the spec allows it) rather than decoded. */
const MAX_DECODED_BYTES = 1024 * 1024;
/**
 * What one report decodes at most, all boxes together: a hostile store of many assertions makes a report of
 * bounded size (past it, assertions are empty objects), so the answer fits a gRPC message and a response.
 */
const MAX_REPORT_DECODED_BYTES = 4 * 1024 * 1024;

const MAX_JSON_DEPTH = 32;

/** Nesting depth of a JSON value, found without recursion (the value may be hostile). */
function depthOf(value: JsonValue): number {
  let deepest = 0;
  const stack: Array<[JsonValue, number]> = [[value, 1]];
  while (stack.length) {
    const [item, depth] = stack.pop()!;
    if (typeof item !== 'object' || item === null) continue;
    deepest = Math.max(deepest, depth);
    if (deepest > MAX_JSON_DEPTH) return deepest;
    for (const child of Array.isArray(item) ? item : Object.values(item)) stack.push([child, depth + 1]);
  }
  return deepest;
}

/** The decoding left to a report (MAX_REPORT_DECODED_BYTES), spent box by box. */
interface Budget {
  left: number;
}

/**
 * The C2PA validation states (C2PA 2.x, "Validation"): Well-Formed (the manifest's structure is sound), Valid (and its
 * signature and hashes check), Trusted (and its signer chains to a trust anchor in force); Invalid when not even
 * well-formed. c2pa-rs reports only Invalid | Valid | Trusted: its Invalid is told apart here by its failure codes.
 */
export type ValidationState = 'Invalid' | 'Well-Formed' | 'Valid' | 'Trusted';

/** Failures that say the manifest is not well-formed (its structure, not its integrity or trust). */
function structural(code: string): boolean {
  return (
    code.startsWith('claim.') ||
    code.startsWith('manifest.') ||
    code.endsWith('.malformed') ||
    code === 'claimSignature.missing' ||
    code === 'hashedURI.missing' ||
    code === 'assertion.missing' ||
    code === 'assertion.undeclared' ||
    code === 'assertion.outsideManifest' ||
    code === 'assertion.required.missing' ||
    code === 'assertion.cbor.invalid' ||
    code === 'assertion.json.invalid'
  );
}

export function validationStateOf(reading: C2paReading): ValidationState | null {
  if (reading.kind === 'malformed') return 'Invalid';
  if (reading.kind !== 'manifest') return null;
  if (reading.validationState === 'Trusted') return 'Trusted';
  if (reading.validationState === 'Valid') return 'Valid';
  const broken = reading.validationEntries.some(
    (e) => e.scope === 'active' && e.kind === 'failure' && structural(e.code),
  );
  return broken ? 'Invalid' : 'Well-Formed';
}

/** Table 1 of the crJSON specification: CBOR to JSON-LD. Byte strings become Base64 prefixed `b64'`. */
export function cborToJson(value: CborValue): JsonValue {
  if (value === null || value === undefined) return null;
  if (typeof value === 'number') return Number.isFinite(value) ? value : null;
  if (typeof value === 'bigint')
    return value >= BigInt(Number.MIN_SAFE_INTEGER) && value <= BigInt(Number.MAX_SAFE_INTEGER)
      ? Number(value)
      : value.toString();
  if (typeof value === 'string' || typeof value === 'boolean') return value;
  if (value instanceof Uint8Array) return `b64'${Buffer.from(value).toString('base64')}`;
  if (Array.isArray(value)) return value.map(cborToJson);
  if (value instanceof Map) {
    const out: JsonObject = {};
    for (const [key, item] of value) {
      const name = typeof key === 'string' ? key : JSON.stringify(cborToJson(key));
      out[name] = cborToJson(item);
    }
    return out;
  }
  if (isTagged(value)) return cborToJson(value.value); // tag 0 (date-time text) and the rest: their content
  return null;
}

const isObject = (value: JsonValue | undefined): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const isString = (value: JsonValue | undefined): value is string => typeof value === 'string';

/** A hashed-URI map as the schema has it: `url`, `hash` and `alg` only. */
function hashedUri(value: JsonValue): JsonObject | undefined {
  if (!isObject(value) || !isString(value.url) || !isString(value.hash)) return undefined;
  return { url: value.url, hash: value.hash, ...(isString(value.alg) ? { alg: value.alg } : {}) };
}

function hashedUris(value: JsonValue | undefined): JsonObject[] {
  return Array.isArray(value) ? value.map(hashedUri).filter((v): v is JsonObject => v !== undefined) : [];
}

function strings(value: JsonValue | undefined): string[] {
  return Array.isArray(value) ? value.filter(isString) : [];
}

function generatorInfo(value: JsonValue | undefined): JsonObject | undefined {
  if (!isObject(value) || !isString(value.name)) return undefined;
  const out: JsonObject = { ...value };
  if (out.icon !== undefined) {
    const icon = hashedUri(out.icon);
    if (icon) out.icon = icon;
    else delete out.icon;
  }
  return out;
}

/** `claim.v2` (claim-map-v2) with the schema's fields only; absent gathered / redacted lists are empty arrays. */
function claimV2(claim: JsonObject): JsonObject {
  const info = generatorInfo(claim.claim_generator_info);
  return {
    ...(isString(claim.instanceID) ? { instanceID: claim.instanceID } : {}),
    ...(info ? { claim_generator_info: info } : {}),
    ...(isString(claim.signature) ? { signature: claim.signature } : {}),
    created_assertions: hashedUris(claim.created_assertions),
    gathered_assertions: hashedUris(claim.gathered_assertions),
    redacted_assertions: strings(claim.redacted_assertions),
    ...(isString(claim['dc:title']) ? { 'dc:title': claim['dc:title'] } : {}),
    ...(isString(claim.alg) ? { alg: claim.alg } : {}),
    ...(isString(claim.alg_soft) ? { alg_soft: claim.alg_soft } : {}),
    ...(isString(claim.specVersion) ? { specVersion: claim.specVersion } : {}),
    ...(isObject(claim.metadata) ? { metadata: claim.metadata } : {}),
  };
}

/** `claim` (claim-map, v1): claims written before generator info was required name only `claim_generator`. */
function claimV1(claim: JsonObject): JsonObject {
  const infos = Array.isArray(claim.claim_generator_info)
    ? claim.claim_generator_info.map((i) => generatorInfo(i)).filter((i): i is JsonObject => i !== undefined)
    : [];
  const generator = isString(claim.claim_generator) ? claim.claim_generator : undefined;
  const redacted = strings(claim.redacted_assertions);
  return {
    ...(generator ? { claim_generator: generator } : {}),
    ...(infos.length
      ? { claim_generator_info: infos }
      : generator
        ? { claim_generator_info: [{ name: generator }] }
        : {}),
    ...(isString(claim.signature) ? { signature: claim.signature } : {}),
    assertions: hashedUris(claim.assertions),
    ...(isString(claim['dc:format']) ? { 'dc:format': claim['dc:format'] } : {}),
    ...(isString(claim.instanceID) ? { instanceID: claim.instanceID } : {}),
    ...(isString(claim['dc:title']) ? { 'dc:title': claim['dc:title'] } : {}),
    ...(redacted.length ? { redacted_assertions: redacted } : {}),
    ...(isString(claim.alg) ? { alg: claim.alg } : {}),
    ...(isString(claim.alg_soft) ? { alg_soft: claim.alg_soft } : {}),
    ...(isObject(claim.metadata) ? { metadata: claim.metadata } : {}),
  };
}

/** The first content box of a superbox (the box after its `jumd` description). */
function contentBox(store: Uint8Array, superbox: JumbfBox): JumbfBox | undefined {
  return childBoxes(store, superbox).find((b) => b.type !== 'jumd');
}

function decodeBox(store: Uint8Array, box: JumbfBox, budget: Budget): JsonValue | undefined {
  const bytes = store.subarray(box.contentStart, box.end);
  if (bytes.length > MAX_DECODED_BYTES || bytes.length > budget.left) return undefined;
  budget.left -= bytes.length;
  try {
    if (box.type === 'cbor') return cborToJson(decodeCbor(bytes));
    if (box.type === 'json') {
      const parsed = JSON.parse(Buffer.from(bytes).toString('utf8')) as JsonValue;
      // As deep as CBOR may be (cbor.ts): a deeper JSON assertion is not decoded, so no later step recurses that far.
      return depthOf(parsed) <= MAX_JSON_DEPTH ? parsed : undefined;
    }
  } catch {
    return undefined;
  }
  return undefined;
}

/** The claim of a manifest and the key it goes under (`claim` for v1, `claim.v2`). */
function claimOf(
  store: Uint8Array,
  manifest: JumbfBox,
  budget: Budget,
): { key: 'claim' | 'claim.v2'; value: JsonObject } | undefined {
  for (const [label, key, shape] of [
    ['c2pa.claim.v2', 'claim.v2', claimV2],
    ['c2pa.claim', 'claim', claimV1],
  ] as const) {
    const box = findLabelled(store, manifest, label);
    if (!box) continue;
    const content = contentBox(store, box);
    const decoded = content ? decodeBox(store, content, budget) : undefined;
    return { key, value: shape(isObject(decoded) ? decoded : {}) };
  }
  return undefined;
}

/**
 * Every assertion of the manifest keyed by its label (instance suffix kept: `c2pa.ingredient.v3__1`). CBOR and JSON
 * assertions are decoded; binary ones (thumbnails, embedded data) are named by their JUMBF URI, and one that cannot
 * be decoded is an empty object, as the specification has it.
 */
function assertionsOf(store: Uint8Array, manifest: JumbfBox, manifestLabel: string, budget: Budget): JsonObject {
  const out: JsonObject = {};
  const assertions = findLabelled(store, manifest, 'c2pa.assertions');
  if (!assertions) return out;
  for (const box of childBoxes(store, assertions)) {
    if (box.type !== 'jumb') continue;
    const label = superboxLabel(store, box);
    if (!label || label in out) continue;
    const content = contentBox(store, box);
    if (content && (content.type === 'cbor' || content.type === 'json')) {
      const decoded = decodeBox(store, content, budget);
      out[label] = isObject(decoded) ? decoded : {};
    } else {
      out[label] = { identifier: `self#jumbf=/c2pa/${manifestLabel}/c2pa.assertions/${label}` };
    }
  }
  return out;
}

const COSE_ALGORITHMS: Readonly<Record<number, string>> = {
  [-7]: 'ES256',
  [-35]: 'ES384',
  [-36]: 'ES512',
  [-37]: 'PS256',
  [-38]: 'PS384',
  [-39]: 'PS512',
  [-8]: 'Ed25519',
};

function coseAlgorithm(cose: Uint8Array): string {
  try {
    let message = decodeCbor(cose);
    if (isTagged(message)) message = message.value;
    const protectedBytes = Array.isArray(message) ? message[0] : undefined;
    if (!(protectedBytes instanceof Uint8Array)) return 'Unknown';
    const header = decodeCbor(protectedBytes);
    const alg = header instanceof Map ? header.get(1) : undefined;
    return (typeof alg === 'number' && COSE_ALGORITHMS[alg]) || 'Unknown';
  } catch {
    return 'Unknown';
  }
}

/** X.509 name attributes the crJSON distinguished name has, by Node's short names. */
const DN_KEYS: Readonly<Record<string, string>> = {
  C: 'C',
  ST: 'ST',
  L: 'L',
  O: 'O',
  OU: 'OU',
  CN: 'CN',
  emailAddress: 'E',
  organizationIdentifier: '2.5.4.97',
};

function distinguishedName(text: string): JsonObject {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const at = line.indexOf('=');
    const key = DN_KEYS[line.slice(0, at)];
    if (at <= 0 || !key) continue;
    const value = line.slice(at + 1);
    out[key] = out[key] ? `${out[key]}, ${value}` : value;
  }
  return out;
}

function certificateInfo(der: Uint8Array): JsonObject {
  const cert = new X509Certificate(Buffer.from(der));
  return {
    serialNumber: cert.serialNumber.toLowerCase(),
    issuer: distinguishedName(cert.issuer),
    subject: distinguishedName(cert.subject),
    validity: {
      notBefore: new Date(cert.validFrom).toISOString(),
      notAfter: new Date(cert.validTo).toISOString(),
    },
  };
}

/** `timeStampInfo`: the RFC 3161 time-stamp's time and TSA certificate, when the signature carries one. */
function timeStampInfo(cose: Uint8Array): JsonObject | undefined {
  try {
    const token = coseTimeStampToken(cose);
    return token ? { timestamp: token.time, certificateInfo: certificateInfo(token.tsaCertificate) } : undefined;
  } catch {
    return undefined; // a token that cannot be read: c2pa-rs reports it (timeStamp.malformed); nothing to describe
  }
}

/** `signature`: the COSE algorithm, the signing (leaf) certificate and the time-stamp; `{}` when unreadable. */
function signatureOf(store: Uint8Array, manifestLabel: string): JsonObject {
  let cose: Uint8Array | undefined;
  let leaf: Uint8Array | undefined;
  try {
    cose = signatureCose(store, manifestLabel);
    leaf = cose ? coseCertificateChain(cose)[0] : undefined;
  } catch {
    return {}; // a signature box that is not COSE: c2pa-rs reports it; the report has no signature to describe
  }
  if (!cose || !leaf) return {};
  let signer: JsonObject;
  try {
    signer = certificateInfo(leaf);
  } catch {
    return {};
  }
  const stamp = timeStampInfo(cose);
  return { algorithm: coseAlgorithm(cose), certificateInfo: signer, ...(stamp ? { timeStampInfo: stamp } : {}) };
}

function statusEntry(e: ValidationEntry): JsonObject {
  return { code: e.code, ...(e.url ? { url: e.url } : {}), ...(e.explanation ? { explanation: e.explanation } : {}) };
}

function statusCodes(entries: readonly ValidationEntry[]): {
  success: JsonObject[];
  informational: JsonObject[];
  failure: JsonObject[];
} {
  return {
    success: entries.filter((e) => e.kind === 'success').map(statusEntry),
    informational: entries.filter((e) => e.kind === 'informational').map(statusEntry),
    failure: entries.filter((e) => e.kind === 'failure').map(statusEntry),
  };
}

/** The manifest a status is about, from its URL (`self#jumbf=/c2pa/<label>/…`, or the label itself). */
function manifestOfUrl(url: string | undefined, labels: ReadonlySet<string>): string | undefined {
  if (!url) return undefined;
  if (labels.has(url)) return url;
  const match = /\/c2pa\/([^/]+)/.exec(url);
  return match?.[1] && labels.has(match[1]) ? match[1] : undefined;
}

/** What the report says of the trust decision and the lists in force (Cairn's terms). */
export interface ReportTrust {
  /** The list, and the copy of it, whose anchor the signer chains to; null when none does. */
  decidedBy: TrustListIdentity | null;
  inForce: readonly TrustListIdentity[];
}

export interface ReportContext {
  /** When the reading was made (RFC 3339): each manifest's validationTime. */
  validationTime: string;
  generator: { name: string; version: string };
  trust: ReportTrust;
}

function trustJson(identity: TrustListIdentity): JsonObject {
  return Object.fromEntries(
    Object.entries(identity).filter((entry): entry is [string, JsonValue] => entry[1] !== undefined),
  );
}

/**
 * The crJSON document of a reading. Manifests come active first, then the others in reverse store order; each
 * carries its claim, assertions, signature and the status codes whose URL names it (codes naming no manifest are the
 * active manifest's), and the active manifest the ingredient deltas. Cairn's terms at the root (the schema allows
 * them there): the validation state, the trust list that decided trust and those in force, and why there is no
 * manifest when there is none.
 */
export function crJsonReport(reading: C2paReading, context: ReportContext): JsonObject {
  const manifests: JsonObject[] = [];
  if (reading.kind === 'manifest' && reading.manifestStore) {
    const store = reading.manifestStore;
    const root = readBox(store, 0, store.length);
    const order = manifestLabels(store);
    const labels = new Set(order);
    const active = order.includes(reading.activeLabel) ? reading.activeLabel : order.at(-1);
    const byManifest = new Map<string, ValidationEntry[]>();
    const deltas = new Map<string, ValidationEntry[]>();
    for (const entry of reading.validationEntries) {
      if (entry.scope === 'ingredient') {
        const key = entry.ingredientUri ?? '';
        deltas.set(key, [...(deltas.get(key) ?? []), entry]);
        continue;
      }
      const owner = manifestOfUrl(entry.url, labels) ?? active ?? '';
      byManifest.set(owner, [...(byManifest.get(owner) ?? []), entry]);
    }
    const budget: Budget = { left: MAX_REPORT_DECODED_BYTES };
    const ordered = [...order].reverse().sort((a, b) => Number(b === active) - Number(a === active));
    for (const label of ordered) {
      const box = root ? findLabelled(store, root, label) : undefined;
      const claim = box ? claimOf(store, box, budget) : undefined;
      if (!box || !claim) continue;
      const manifest: JsonObject = {
        label,
        assertions: assertionsOf(store, box, label, budget),
        [claim.key]: claim.value,
        signature: signatureOf(store, label),
        validationResults: {
          ...statusCodes(byManifest.get(label) ?? []),
          specVersion: VALIDATION_SPEC_VERSION,
          validationTime: context.validationTime,
        },
      };
      if (label === active && deltas.size > 0) {
        manifest.ingredientDeltas = [...deltas].map(([uri, entries]) => ({
          ingredientAssertionURI: uri,
          validationDeltas: statusCodes(entries),
        }));
      }
      manifests.push(manifest);
    }
  }
  const state = validationStateOf(reading);
  return {
    '@context': { '@vocab': CRJSON_VOCABULARY, cairn: CAIRN_VOCABULARY },
    manifests,
    jsonGenerator: { name: context.generator.name, version: context.generator.version },
    'cairn:validationState': state,
    'cairn:validationTime': context.validationTime,
    'cairn:trustList': context.trust.decidedBy ? trustJson(context.trust.decidedBy) : null,
    'cairn:trustListsInForce': context.trust.inForce.map(trustJson),
    ...(reading.kind === 'manifest' ? {} : { 'cairn:manifestStore': storeNote(reading) }),
  };
}

/** Why a reading has no manifest to report. */
function storeNote(reading: Exclude<C2paReading, { kind: 'manifest' }>): JsonObject {
  switch (reading.kind) {
    case 'none':
      return { found: false };
    case 'unsupported':
      return { found: false, detail: `no C2PA parser for ${reading.mimeType}` };
    case 'malformed':
      return { found: true, detail: reading.detail };
    case 'remote':
      return { found: false, remoteUrl: reading.url, detail: 'remote manifest not fetched' };
  }
}
