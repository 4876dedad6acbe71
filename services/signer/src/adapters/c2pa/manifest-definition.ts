// Turns Cairn's sign input into a c2pa-rs ManifestDefinition (the JSON `Builder.withJson` takes). Pure, so the
// manifest's content can be tested without signing. c2pa-node 0.8 types the definition through
// @contentauth/c2pa-types, which is not installed here, so the subset Cairn writes is typed locally.
import {
  ACTIONS_ASSERTION,
  AI_DISCLOSURE_ASSERTION,
  C2PA_SPEC_VERSION,
  GENERATION_ASSERTION,
  GENERIC_MODEL_TYPE,
  RECORD_ASSERTION,
  selfAssertionUri,
  SOFT_BINDING_ASSERTION,
  THUMBNAIL_RESOURCE_ID,
  WATERMARK_PARAMETER,
  WATERMARKED_BOUND_ACTION,
} from './labels.js';
import { C2paInputError } from '../../domain/c2pa-failures.js';
import type { BuildAndSignInput, GenerationMetadata, SoftBindingInput } from './types.js';

export { C2paInputError } from '../../domain/c2pa-failures.js';

export interface AssertionDefinition {
  label: string;
  data: Record<string, unknown>;
  /** Absent = CBOR. */
  kind?: 'Json';
  /**
   * Listed in the claim's `created_assertions` (attributed to the signer) rather than `gathered_assertions`
   * (c2pa-rs's default for a Builder assertion). C2PA requires an actions assertion among the created ones (§18.15.2).
   */
  created?: true;
}

export interface ManifestDefinition {
  claim_generator_info: Array<{ name: string; version: string; specVersion: string }>;
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

/**
 * The watermark as an action (C2PA 2.3 `c2pa.watermarked.bound`): the soft-binding assertion it made is named by
 * its JUMBF URI in Cairn's own parameter, with the algorithm and the key id (see WATERMARK_PARAMETER for why not
 * `relatedAssertions`).
 */
function watermarkAction(softBinding: SoftBindingInput): Record<string, unknown> {
  const watermark: Record<string, string> = {
    softBinding: selfAssertionUri(SOFT_BINDING_ASSERTION),
    alg: softBinding.alg,
  };
  if (softBinding.keyId) watermark.keyId = softBinding.keyId;
  return { action: WATERMARKED_BOUND_ACTION, parameters: { [WATERMARK_PARAMETER]: watermark } };
}

// IPTC (and C2PA) source types for which a trained model made or changed the content: C2PA 2.4 §18.28.3 attaches
// the AI disclosure to these and not to, e.g., digitalCreation or algorithmicMedia (no trained model).
const GENERATIVE_SOURCE_TYPES = new Set([
  'trainedAlgorithmicMedia',
  'compositeWithTrainedAlgorithmicMedia',
  'trainedAlgorithmicData',
]);

export function isGenerativeSourceType(digitalSourceType: string): boolean {
  return GENERATIVE_SOURCE_TYPES.has(digitalSourceType.slice(digitalSourceType.lastIndexOf('/') + 1));
}

/**
 * C2PA 2.4 AI disclosure: the generic model type (Cairn is not told the model's framework) and the model's name when
 * the caller gave one. No `contentProfile`: Cairn does not know how much a human oversaw the output.
 */
function aiDisclosure(metadata: Record<string, string>): AssertionDefinition {
  const data: Record<string, string> = { modelType: GENERIC_MODEL_TYPE };
  if (metadata.model) data.modelName = metadata.model;
  return { label: AI_DISCLOSURE_ASSERTION, data, created: true };
}

export function buildManifestPlan(input: BuildAndSignInput): ManifestPlan {
  const { claimGenerator, softBinding, thumbnail, digitalSourceType } = input;
  if (claimGenerator.name !== 'cairn' || !claimGenerator.version) {
    throw new C2paInputError('claimGenerator must be { name: "cairn", version }');
  }
  if (softBinding && (!softBinding.alg || !softBinding.value)) {
    throw new C2paInputError('softBinding needs alg and value');
  }
  // One actions assertion, always among the created ones: c2pa.created (or, for the edit intent, the c2pa.opened
  // c2pa-rs puts first), then the watermark when one was embedded.
  const actions: Array<Record<string, unknown>> = [];
  if (digitalSourceType) actions.push(createdAction(input, digitalSourceType));
  if (softBinding) actions.push(watermarkAction(softBinding));
  const assertions: AssertionDefinition[] = [{ label: ACTIONS_ASSERTION, data: { actions }, created: true }];

  const generation = generationAssertionData(input.metadata);
  if (digitalSourceType && isGenerativeSourceType(digitalSourceType)) assertions.push(aiDisclosure(generation));
  // The caller's metadata, gathered: Cairn records it, the caller asserts it. Creator and legal entity are kept here
  // only; schema.org CreativeWork, which used to repeat them, is deprecated since C2PA 1.4.
  if (Object.keys(generation).length > 0) assertions.push({ label: GENERATION_ASSERTION, data: generation });

  if (softBinding) {
    // The C2PA soft-binding assertion: the whole asset is the scope (an empty scope map, §18.10.3).
    assertions.push({
      label: SOFT_BINDING_ASSERTION,
      data: { alg: softBinding.alg, blocks: [{ scope: {}, value: softBinding.value }] },
      created: true,
    });
  }

  if (input.record) {
    assertions.push({
      label: RECORD_ASSERTION,
      data: { asset_id: input.record.assetId, manifest_id: input.record.manifestId },
      created: true,
    });
  }

  const definition: ManifestDefinition = {
    claim_generator_info: [
      { name: claimGenerator.name, version: claimGenerator.version, specVersion: C2PA_SPEC_VERSION },
    ],
    format: input.mimeType,
    assertions,
  };
  if (input.title) definition.title = input.title;
  if (thumbnail) definition.thumbnail = { format: thumbnail.mimeType, identifier: THUMBNAIL_RESOURCE_ID };
  return { definition, intent: digitalSourceType ? undefined : 'edit' };
}
