import { CairnError } from '@cairn/errors';
import { childBoxes, readBox, superboxLabel, type JumbfBox } from '@cairn/jumbf';
import { decodeCbor, type CborMap } from './cbor.js';

/** What the repository reads from an uploaded manifest store. */
export interface InspectedStore {
  /** The active (last) manifest's label. */
  label: string;
  /** Soft-binding values of the active manifest's c2pa.soft-binding assertions. */
  softBindings: Array<{ alg: string; value: string }>;
}

/** Longest soft-binding value indexed from an assertion (longer ones are left out, not refused). */
const MAX_VALUE_LENGTH = 4096;
/** Most values indexed per store. */
const MAX_BINDINGS = 64;

const invalid = (why: string) =>
  new CairnError('cairn.validation.invalid_body', `The body is not a C2PA manifest store (application/c2pa): ${why}.`);

/**
 * Checks that `bytes` are a C2PA manifest store: one JUMBF superbox labelled `c2pa` spanning the whole body, holding
 * manifests that each carry a claim and a claim signature. The signature itself is not checked here (a stored
 * manifest is the uploader's statement, not Cairn's; docs/api.md). Throws cairn.validation.invalid_body.
 */
export function inspectManifestStore(bytes: Uint8Array): InspectedStore {
  const root = readBox(bytes, 0, bytes.length);
  if (!root || root.type !== 'jumb' || root.end !== bytes.length) throw invalid('no JUMBF superbox spans the body');
  if (superboxLabel(bytes, root) !== 'c2pa') throw invalid('the superbox is not labelled "c2pa"');
  const manifests = childBoxes(bytes, root).filter((b) => b.type === 'jumb');
  if (manifests.length === 0) throw invalid('it holds no manifest');
  for (const manifest of manifests) {
    const labels = childLabels(bytes, manifest);
    if (!labels.has('c2pa.claim') && !labels.has('c2pa.claim.v2')) throw invalid('a manifest has no claim');
    if (!labels.has('c2pa.signature')) throw invalid('a manifest has no claim signature');
  }
  const active = manifests.at(-1)!;
  const label = superboxLabel(bytes, active);
  if (!label) throw invalid('the active manifest has no label');
  return { label, softBindings: softBindingsOf(bytes, active) };
}

function childLabels(bytes: Uint8Array, box: JumbfBox): Map<string, JumbfBox> {
  const out = new Map<string, JumbfBox>();
  for (const child of childBoxes(bytes, box)) {
    if (child.type !== 'jumb') continue;
    const label = superboxLabel(bytes, child);
    if (label !== undefined) out.set(label, child);
  }
  return out;
}

/**
 * The `alg` and block values of the manifest's `c2pa.soft-binding` assertions (also `c2pa.soft-binding__N`). An
 * assertion that does not decode is skipped: the store is still kept, only that value is not findable.
 */
function softBindingsOf(bytes: Uint8Array, manifest: JumbfBox): Array<{ alg: string; value: string }> {
  const assertions = childLabels(bytes, manifest).get('c2pa.assertions');
  if (!assertions) return [];
  const out: Array<{ alg: string; value: string }> = [];
  for (const [label, box] of childLabels(bytes, assertions)) {
    if (!/^c2pa\.soft-binding(__\d+)?$/.test(label)) continue;
    const cbor = childBoxes(bytes, box).find((b) => b.type === 'cbor');
    if (!cbor) continue;
    let data: unknown;
    try {
      data = decodeCbor(bytes.subarray(cbor.contentStart, cbor.end));
    } catch {
      continue;
    }
    const assertion = data as CborMap | undefined;
    const alg = typeof assertion?.alg === 'string' ? assertion.alg.trim() : '';
    if (!alg || alg.length > 128 || !Array.isArray(assertion?.blocks)) continue;
    for (const block of assertion.blocks) {
      const raw = (block as CborMap | undefined)?.value;
      const value =
        typeof raw === 'string' ? raw : raw instanceof Uint8Array ? Buffer.from(raw).toString('base64') : '';
      if (value && value.length <= MAX_VALUE_LENGTH && out.length < MAX_BINDINGS) out.push({ alg, value });
    }
  }
  return out;
}
