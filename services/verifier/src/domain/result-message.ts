import type { MessageInitShape } from '@bufbuild/protobuf';
import { toTimestamp, verificationStatuses, type verifierV1 } from '@cairn/proto';
import type { Verdict } from './verdict.js';

type ResultInit = MessageInitShape<typeof verifierV1.VerificationResultSchema>;

/** A verdict as the VerificationResult message (optional fields left unset when the signal did not run). */
export function toResultMessage(
  verdict: Omit<Verdict, 'matches'> & { matches?: Verdict['matches'] },
  ids: { manifestId?: string; assetId?: string; verifiedAt: string },
): ResultInit {
  const c = verdict.claims;
  return {
    status: verificationStatuses.toProto(verdict.status),
    ...(verdict.confidence !== null ? { confidence: verdict.confidence } : {}),
    signals: {
      ocspStatus: verdict.signals.ocsp_status,
      ...(verdict.signals.c2pa_manifest_present !== undefined
        ? { c2paManifestPresent: verdict.signals.c2pa_manifest_present }
        : {}),
      ...(verdict.signals.c2pa_signature_valid !== undefined
        ? { c2paSignatureValid: verdict.signals.c2pa_signature_valid }
        : {}),
      ...(verdict.signals.signer_trusted !== undefined ? { signerTrusted: verdict.signals.signer_trusted } : {}),
      ...(verdict.signals.timestamp_valid !== undefined ? { timestampValid: verdict.signals.timestamp_valid } : {}),
      ...(verdict.signals.watermark_present !== undefined
        ? { watermarkPresent: verdict.signals.watermark_present }
        : {}),
      ...(verdict.signals.watermark_payload_valid !== undefined
        ? { watermarkPayloadValid: verdict.signals.watermark_payload_valid }
        : {}),
      ...(verdict.signals.fingerprint_match !== undefined
        ? { fingerprintMatch: verdict.signals.fingerprint_match }
        : {}),
      ...(verdict.signals.anchor_match !== undefined ? { anchorMatch: verdict.signals.anchor_match } : {}),
    },
    ...(c
      ? {
          claims: {
            origin: c.origin ?? '',
            generator: c.generator ?? '',
            model: c.model ?? '',
            ...(c.ai_generated !== undefined ? { aiGenerated: c.ai_generated } : {}),
            ...(c.ai_assisted !== undefined ? { aiAssisted: c.ai_assisted } : {}),
            createdAt: c.created_at ?? '',
            signedBy: c.signed_by ?? '',
            signedAt: c.signed_at ?? '',
            signingKey: c.signing_key ?? '',
          },
        }
      : {}),
    matches: (verdict.matches ?? []).map((m) => ({
      assetId: m.assetId,
      manifestUri: m.manifestUri,
      verifierUrl: m.verifierUrl,
      via: m.via,
      similarity: m.similarity,
    })),
    warnings: verdict.warnings,
    developerExplanation: verdict.developer_explanation,
    userExplanation: verdict.user_explanation,
    proves: verdict.proves,
    doesNotProve: verdict.does_not_prove,
    manifestId: ids.manifestId ?? '',
    assetId: ids.assetId ?? '',
    verifiedAt: toTimestamp(ids.verifiedAt),
  };
}
