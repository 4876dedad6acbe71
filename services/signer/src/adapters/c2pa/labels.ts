// Assertion labels Cairn writes. The verifier keeps its own copy of these strings (services do not import each
// other's sources); a change here is a manifest format change and needs the verifier to learn it first.

/** Custom assertion holding the API's sign metadata (reverse-domain label, CBOR). */
export const GENERATION_ASSERTION = 'com.cairn.generation';

/**
 * Cairn's record of the asset this manifest was made for (CBOR `{asset_id, manifest_id}`). Signed with the claim,
 * so under Cairn's own signature it is the only link the verifier makes between a file and a Cairn asset: a title,
 * a file name or any unsigned field can be written by anyone.
 */
export const RECORD_ASSERTION = 'com.cairn.record';

/** C2PA soft-binding assertion (c2pa-rs 0.90 `labels::SOFT_BINDING`). */
export const SOFT_BINDING_ASSERTION = 'c2pa.soft-binding';

/**
 * C2PA 2.4 AI disclosure assertion (§18.28), written beside a generative `digitalSourceType`. c2pa-rs 0.90 does not
 * know the label and writes it as a plain CBOR assertion.
 */
export const AI_DISCLOSURE_ASSERTION = 'c2pa.ai-disclosure';

/** The generic model type of C2PA 2.4 Table 12: Cairn is told a model's name, never its framework. */
export const GENERIC_MODEL_TYPE = 'c2pa.types.model';

/** C2PA 2.3 action: a watermark was embedded to create a soft binding (§18.15.5: needs a soft-binding assertion). */
export const WATERMARKED_BOUND_ACTION = 'c2pa.watermarked.bound';

/**
 * Entity-specific action parameter (§18.15.4.7) naming the soft-binding assertion a watermark action relates to,
 * with the mark's algorithm and key id. The spec's `relatedAssertions` needs the assertion's hashed URI, whose hash
 * c2pa-rs computes over a random salt while it signs, so no caller of its Builder can write it (docs/conformance.md).
 */
export const WATERMARK_PARAMETER = 'com.cairn.watermark';

/**
 * The version of the C2PA specification Cairn's manifests are made against (`specVersion` in
 * `claim_generator_info`, §10.2.3.2). What Cairn does not yet meet of it is listed in docs/conformance.md.
 */
export const C2PA_SPEC_VERSION = '2.4.0';

/** JUMBF URI of an assertion of the same manifest (§8.4), as c2pa-rs labels the first instance of a label. */
export function selfAssertionUri(label: string): string {
  return `self#jumbf=c2pa.assertions/${label}`;
}

/** c2pa-rs writes v2 (`c2pa.actions.v2`) for claim version 2 when given this label. */
export const ACTIONS_ASSERTION = 'c2pa.actions';

/** Builder resource id under which the caller's thumbnail is added; becomes the claim thumbnail. */
export const THUMBNAIL_RESOURCE_ID = 'cairn-claim-thumbnail';
