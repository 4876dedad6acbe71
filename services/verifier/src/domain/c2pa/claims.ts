// Reads the claims Cairn reports (generator, AI involvement, creator...) out of the active manifest's
// assertions. Works for Cairn's own manifests (com.cairn.generation) and, as far as the standard assertions
// go, for anyone else's.
import { asArray, asRecord, asString, type AssertionJson, type ManifestJson } from './store-json.js';
import type { C2paClaims, SoftBindingClaim } from './types.js';

// Keep in step with services/signer/src/adapters/c2pa/labels.ts.
export const GENERATION_ASSERTION = 'com.cairn.generation';
export const SOFT_BINDING_ASSERTION = 'c2pa.soft-binding';
export const CREATIVE_WORK_ASSERTION = 'stds.schema-org.CreativeWork';
export const ACTIONS_ASSERTION = 'c2pa.actions';
export const RECORD_ASSERTION = 'com.cairn.record';

const ASSET_ID = /^a_[0-9A-HJKMNP-TV-Z]{26}$/;
const MANIFEST_ID = /^m_[0-9A-HJKMNP-TV-Z]{26}$/;

/** `com.cairn.record` as written by the signer, or undefined when absent or not of that exact shape. */
function cairnRecordOf(assertions: readonly AssertionJson[]): C2paClaims['cairnRecord'] {
  const found = assertionsNamed(assertions, RECORD_ASSERTION);
  // Two records in one manifest name no single asset.
  if (found.length !== 1) return undefined;
  const data = asRecord(found[0]?.data);
  const assetId = asString(data?.asset_id);
  const manifestId = asString(data?.manifest_id);
  return assetId && manifestId && ASSET_ID.test(assetId) && MANIFEST_ID.test(manifestId)
    ? { assetId, manifestId }
    : undefined;
}

/** `c2pa.actions.v2__1` → `c2pa.actions`: drops the instance suffix and the version suffix. */
export function baseLabel(label: string): string {
  return label.replace(/__\d+$/, '').replace(/\.v\d+$/, '');
}

function assertionsNamed(assertions: readonly AssertionJson[], base: string): AssertionJson[] {
  return assertions.filter((a) => baseLabel(a.label) === base);
}

// Source types compared by their last path segment so http/https spellings of the IPTC URI both match.
const AI_GENERATED_TYPES = new Set(['trainedAlgorithmicMedia', 'trainedAlgorithmicData']);
const AI_ASSISTED_TYPES = new Set(['compositeWithTrainedAlgorithmicMedia']);

function sourceTypeName(uri: string): string {
  return uri.slice(uri.lastIndexOf('/') + 1);
}

interface ActionView {
  action: string;
  digitalSourceType?: string;
  softwareAgent?: string;
  when?: string;
}

function actionsOf(assertions: readonly AssertionJson[]): ActionView[] {
  const out: ActionView[] = [];
  for (const assertion of assertionsNamed(assertions, ACTIONS_ASSERTION)) {
    for (const item of asArray(asRecord(assertion.data)?.actions)) {
      const action = asRecord(item);
      const name = asString(action?.action);
      if (!action || !name) continue;
      // v1: softwareAgent is a string; v2: a ClaimGeneratorInfo map.
      const agent = asString(action.softwareAgent) ?? asString(asRecord(action.softwareAgent)?.name);
      out.push({
        action: name,
        digitalSourceType: asString(action.digitalSourceType),
        softwareAgent: agent,
        when: asString(action.when),
      });
    }
  }
  return out;
}

function generationOf(assertions: readonly AssertionJson[]): Record<string, string> {
  const out: Record<string, string> = {};
  const data = asRecord(assertionsNamed(assertions, GENERATION_ASSERTION)[0]?.data);
  if (!data) return out;
  for (const [key, value] of Object.entries(data)) {
    if (typeof value === 'string') out[key] = value;
  }
  return out;
}

function creativeWorkAuthors(assertions: readonly AssertionJson[]): { person?: string; organization?: string } {
  const result: { person?: string; organization?: string } = {};
  for (const assertion of assertionsNamed(assertions, CREATIVE_WORK_ASSERTION)) {
    for (const item of asArray(asRecord(assertion.data)?.author)) {
      const author = asRecord(item);
      const name = asString(author?.name);
      if (!name) continue;
      if (author?.['@type'] === 'Organization') result.organization ??= name;
      else result.person ??= name;
    }
  }
  return result;
}

export function softBindingsOf(assertions: readonly AssertionJson[]): SoftBindingClaim[] {
  const out: SoftBindingClaim[] = [];
  for (const assertion of assertionsNamed(assertions, SOFT_BINDING_ASSERTION)) {
    const data = asRecord(assertion.data);
    const alg = asString(data?.alg);
    if (!alg) continue;
    for (const item of asArray(data?.blocks)) {
      const value = asString(asRecord(item)?.value);
      if (value) out.push({ alg, value });
    }
  }
  return out;
}

export function claimsOf(manifest: ManifestJson): C2paClaims {
  const actions = actionsOf(manifest.assertions);
  const inception = actions.find((a) => a.action === 'c2pa.created') ?? actions.find((a) => a.action === 'c2pa.opened');
  const generation = generationOf(manifest.assertions);
  const authors = creativeWorkAuthors(manifest.assertions);

  const inceptionType = inception?.digitalSourceType ? sourceTypeName(inception.digitalSourceType) : undefined;
  const aiGenerated = inceptionType !== undefined && AI_GENERATED_TYPES.has(inceptionType);
  const anyAi = actions.some((a) => {
    const name = a.digitalSourceType ? sourceTypeName(a.digitalSourceType) : undefined;
    return name !== undefined && (AI_GENERATED_TYPES.has(name) || AI_ASSISTED_TYPES.has(name));
  });

  const claims: C2paClaims = { aiGenerated, aiAssisted: !aiGenerated && anyAi };
  const set = <K extends keyof C2paClaims>(key: K, value: C2paClaims[K] | undefined): void => {
    if (value !== undefined && value !== '') claims[key] = value;
  };
  set('claimGenerator', manifest.claimGenerator);
  set('title', manifest.title);
  set('generator', generation.generator ?? inception?.softwareAgent);
  set('model', generation.model);
  set('digitalSourceType', inception?.digitalSourceType);
  set('createdAt', generation.created_at ?? inception?.when);
  set('creator', generation.creator ?? authors.person);
  set('legalEntity', generation.legal_entity ?? authors.organization);
  set('legalCaseRef', generation.legal_case_ref);
  set('promptHash', generation.prompt_hash);
  set('cairnRecord', cairnRecordOf(manifest.assertions));
  return claims;
}
