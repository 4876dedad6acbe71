import { anchorBatchStates, isoTimestamp, type signerV1 } from '@cairn/proto';

/**
 * The Sign result (and a done Job's fields) in the API's names: the 200 body of POST /v1/sign, recorded as is for
 * an Idempotency-Key replay, and the `result` of GET /v1/jobs/{id}.
 */
export function presentSignResult(result: signerV1.SignResponse): Record<string, unknown> {
  return {
    asset_id: result.assetId,
    ...(result.watermarkId ? { watermark_id: result.watermarkId } : {}),
    manifest_id: result.manifestId,
    manifest_uri: result.manifestUri,
    verifier_url: result.verifierUrl,
    asset_url: result.assetUrl,
    media_type: result.mediaType,
    ...(result.anchor?.batchId
      ? { anchor: { batch_id: result.anchor.batchId, status: anchorBatchStates.fromProto(result.anchor.status) } }
      : {}),
    created_at: isoTimestamp(result.createdAt),
    expires_at: isoTimestamp(result.expiresAt),
    // A closed set (docs/api.md, "Sign warnings"); absent when there is nothing to say.
    ...(result.warnings.length ? { warnings: [...result.warnings] } : {}),
    ...(result.watermarkNotEmbeddedReason ? { watermark_not_embedded_reason: result.watermarkNotEmbeddedReason } : {}),
  };
}
