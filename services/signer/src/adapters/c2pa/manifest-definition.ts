// Turns Cairn's sign input into a c2pa-rs ManifestDefinition (the JSON `Builder.withJson` takes). Pure, so the
// manifest's content can be tested without signing. c2pa-node 0.8 types the definition through
// @contentauth/c2pa-types, which is not installed here, so the subset Cairn writes is typed locally.
import {
  ACTIONS_ASSERTION,
  CREATIVE_WORK_ASSERTION,
  GENERATION_ASSERTION,
  RECORD_ASSERTION,
  SOFT_BINDING_ASSERTION,
  THUMBNAIL_RESOURCE_ID,
} from './labels.js';
import type { BuildAndSignInput, GenerationMetadata } from './types.js';

export interface AssertionDefinition {
  label: string;
  data: Record<string, unknown>;
  /** Absent = CBOR. */
  kind?: 'Json';
}

export interface ManifestDefinition {
  claim_generator_info: Array<{ name: string; version: string }>;
  title?: string;
  format: string;
  thumbnail?: { format: string; identifier: string };
  assertions: AssertionDefinition[];
}

/** What the Builder needs besides the definition. */
export interface ManifestPlan {
  definition: ManifestDefinition;
  /**
   * `edit` when no digitalSourceType is given: c2pa-rs 0.90 marks a v2 claim without a c2pa.created /
   * c2pa.opened action `assertion.action.malformed`, and `created` requires a digitalSourceType. The edit
   * intent records the received file as the parentOf ingredient with c2pa.opened (and keeps any provenance
   * it already carried).
   */
  intent: 'edit' | undefined;
}

export class C2paInputError extends Error {
  override readonly name = 'C2paInputError';
}

const GENERATION_KEYS = [
  'generator',
  'model',
  'prompt_hash',
  'created_at',
  'creator',
  'legal_entity',
  'legal_case_ref',
] as const satisfies ReadonlyArray<keyof GenerationMetadata>;

// The API defines prompt_hash as `sha256:<hex digest>`. Checking the form keeps a caller that passes the
// prompt itself by mistake from writing it into a signed, public manifest.
const PROMPT_HASH = /^sha256:[0-9a-f]{64}$/i;

/** Copies exactly the known metadata fields (an extra field such as `prompt` is never carried over). */
export function generationAssertionData(metadata: GenerationMetadata): Record<string, string> {
  const out: Record<string, string> = {};
  for (const key of GENERATION_KEYS) {
    const value = metadata[key];
    if (value === undefined || value === null) continue;
    if (typeof value !== 'string') throw new C2paInputError(`metadata.${key} must be a string`);
    out[key] = value;
  }
  if (out.prompt_hash !== undefined && !PROMPT_HASH.test(out.prompt_hash)) {
    throw new C2paInputError('metadata.prompt_hash must have the form sha256:<64 hex digits>');
  }
  if (out.created_at !== undefined && Number.isNaN(Date.parse(out.created_at))) {
    throw new C2paInputError('metadata.created_at must be an ISO 8601 timestamp');
  }
  return out;
}

function createdAction(input: BuildAndSignInput, digitalSourceType: string): Record<string, unknown> {
  const action: Record<string, unknown> = { action: 'c2pa.created', digitalSourceType };
  // In a v2 actions assertion softwareAgent is a ClaimGeneratorInfo map, not a string.
  const agent = input.metadata.generator ?? input.metadata.model;
  if (agent) action.softwareAgent = { name: agent };
  if (input.metadata.created_at) action.when = new Date(input.metadata.created_at).toISOString();
  return action;
}

function creativeWork(metadata: GenerationMetadata): AssertionDefinition | undefined {
  const author: Array<Record<string, string>> = [];
  if (metadata.creator) author.push({ '@type': 'Person', name: metadata.creator });
  if (metadata.legal_entity) author.push({ '@type': 'Organization', name: metadata.legal_entity });
  if (author.length === 0) return undefined;
  return {
    label: CREATIVE_WORK_ASSERTION,
    kind: 'Json',
    data: { '@context': 'http://schema.org/', '@type': 'CreativeWork', author },
  };
}

export function buildManifestPlan(input: BuildAndSignInput): ManifestPlan {
  const { claimGenerator, softBinding, thumbnail, digitalSourceType } = input;
  if (claimGenerator.name !== 'cairn' || !claimGenerator.version) {
    throw new C2paInputError('claimGenerator must be { name: "cairn", version }');
  }
  const assertions: AssertionDefinition[] = [];
  if (digitalSourceType) {
    assertions.push({ label: ACTIONS_ASSERTION, data: { actions: [createdAction(input, digitalSourceType)] } });
  }
  const generation = generationAssertionData(input.metadata);
  if (Object.keys(generation).length > 0) assertions.push({ label: GENERATION_ASSERTION, data: generation });

  const work = creativeWork(generation);
  if (work) assertions.push(work);

  if (softBinding) {
    if (!softBinding.alg || !softBinding.value) throw new C2paInputError('softBinding needs alg and value');
    // Shape of the C2PA soft-binding assertion (c2pa-rs `SoftBinding`): the whole asset is the scope.
    assertions.push({
      label: SOFT_BINDING_ASSERTION,
      data: { alg: softBinding.alg, blocks: [{ scope: {}, value: softBinding.value }] },
    });
  }

  if (input.record) {
    assertions.push({
      label: RECORD_ASSERTION,
      data: { asset_id: input.record.assetId, manifest_id: input.record.manifestId },
    });
  }

  const definition: ManifestDefinition = {
    claim_generator_info: [{ name: claimGenerator.name, version: claimGenerator.version }],
    format: input.mimeType,
    assertions,
  };
  if (input.title) definition.title = input.title;
  if (thumbnail) definition.thumbnail = { format: thumbnail.mimeType, identifier: THUMBNAIL_RESOURCE_ID };
  return { definition, intent: digitalSourceType ? undefined : 'edit' };
}
