// Typed, defensive view of c2pa-rs's Reader JSON (c2pa-node `reader.json()`), which is untyped here
// (@contentauth/c2pa-types is not installed) and, for a hostile file, attacker-shaped.
import type { ValidationEntry } from './types.js';

export type JsonRecord = Record<string, unknown>;

export function asRecord(value: unknown): JsonRecord | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as JsonRecord) : undefined;
}

export function asString(value: unknown): string | undefined {
  return typeof value === 'string' ? value : undefined;
}

export function asArray(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

export interface AssertionJson {
  /** Label as c2pa-rs reports it, e.g. `c2pa.actions.v2`, `c2pa.soft-binding__1`. */
  label: string;
  data: unknown;
}

export interface SignatureInfoJson {
  alg?: string;
  /** c2pa-rs fills this with the signing certificate's subject O (not the issuer's). */
  issuer?: string;
  commonName?: string;
  /** Decimal. */
  certSerialNumber?: string;
  time?: string;
}

export interface ManifestJson {
  label: string;
  claimGenerator?: string;
  title?: string;
  format?: string;
  thumbnail?: { format: string; identifier: string };
  assertions: AssertionJson[];
  signatureInfo: SignatureInfoJson;
}

export interface StoreJson {
  activeLabel?: string;
  active?: ManifestJson;
  validationState: string;
  entries: ValidationEntry[];
}

function claimGeneratorOf(manifest: JsonRecord): string | undefined {
  const legacy = asString(manifest.claim_generator);
  if (legacy) return legacy;
  // v2 claims carry only claim_generator_info; the first entry is the application (c2pa-rs adds its own
  // version as an extra key of that entry).
  const first = asRecord(asArray(manifest.claim_generator_info)[0]);
  const name = asString(first?.name);
  if (!name) return undefined;
  const version = asString(first?.version);
  return version ? `${name}/${version}` : name;
}

function parseManifest(label: string, value: unknown): ManifestJson | undefined {
  const manifest = asRecord(value);
  if (!manifest) return undefined;
  const assertions: AssertionJson[] = [];
  for (const item of asArray(manifest.assertions)) {
    const assertion = asRecord(item);
    const assertionLabel = asString(assertion?.label);
    if (assertion && assertionLabel) assertions.push({ label: assertionLabel, data: assertion.data });
  }
  const thumb = asRecord(manifest.thumbnail);
  const thumbFormat = asString(thumb?.format);
  const thumbId = asString(thumb?.identifier);
  const sig = asRecord(manifest.signature_info) ?? {};
  const serial = sig.cert_serial_number;
  return {
    label,
    claimGenerator: claimGeneratorOf(manifest),
    title: asString(manifest.title),
    format: asString(manifest.format),
    thumbnail: thumbFormat && thumbId ? { format: thumbFormat, identifier: thumbId } : undefined,
    assertions,
    signatureInfo: {
      alg: asString(sig.alg),
      issuer: asString(sig.issuer),
      commonName: asString(sig.common_name),
      certSerialNumber: typeof serial === 'number' ? String(serial) : asString(serial),
      time: asString(sig.time),
    },
  };
}

function entriesOf(group: unknown, scope: ValidationEntry['scope'], ingredientUri?: string): ValidationEntry[] {
  const out: ValidationEntry[] = [];
  const record = asRecord(group);
  if (!record) return out;
  for (const kind of ['success', 'informational', 'failure'] as const) {
    for (const item of asArray(record[kind])) {
      const status = asRecord(item);
      const code = asString(status?.code);
      if (!code) continue;
      const entry: ValidationEntry = { code, kind, scope };
      const url = asString(status?.url);
      const explanation = asString(status?.explanation);
      if (url) entry.url = url;
      if (explanation) entry.explanation = explanation;
      if (ingredientUri) entry.ingredientUri = ingredientUri;
      out.push(entry);
    }
  }
  return out;
}

function validationEntries(store: JsonRecord): ValidationEntry[] {
  const results = asRecord(store.validation_results);
  if (results) {
    const entries = entriesOf(results.activeManifest, 'active');
    for (const delta of asArray(results.ingredientDeltas)) {
      const record = asRecord(delta);
      entries.push(...entriesOf(record?.validationDeltas, 'ingredient', asString(record?.ingredientAssertionURI)));
    }
    return entries;
  }
  // Older shape: a flat list of failures only.
  return entriesOf({ failure: store.validation_status }, 'active');
}

/** `json` is what c2pa-node's `reader.json()` returns (already parsed). */
export function parseStoreJson(json: unknown): StoreJson {
  const store = asRecord(json);
  if (!store) throw new Error('Reader JSON is not an object');
  const activeLabel = asString(store.active_manifest);
  const manifests = asRecord(store.manifests) ?? {};
  const active = activeLabel ? parseManifest(activeLabel, manifests[activeLabel]) : undefined;
  return {
    activeLabel,
    active,
    validationState: asString(store.validation_state) ?? 'Invalid',
    entries: validationEntries(store),
  };
}
