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

/** Deprecated in C2PA 2.x but still read by c2pa-rs 0.90 and most viewers; carries creator / legal entity. */
export const CREATIVE_WORK_ASSERTION = 'stds.schema-org.CreativeWork';

/** c2pa-rs writes v2 (`c2pa.actions.v2`) for claim version 2 when given this label. */
export const ACTIONS_ASSERTION = 'c2pa.actions';

/** Builder resource id under which the caller's thumbnail is added; becomes the claim thumbnail. */
export const THUMBNAIL_RESOURCE_ID = 'cairn-claim-thumbnail';
