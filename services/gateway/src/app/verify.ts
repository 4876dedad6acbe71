import type { BlobStore } from '@cairn/blob';
import { CairnError } from '@cairn/errors';
import { modalities, type verifierV1 } from '@cairn/proto';
import type { ClientOf } from '@cairn/rpc';
import { sniffMediaType } from '@cairn/sniff';
import { uploadHead } from './upload-head.js';
import type { Tenant } from './ports.js';
import { reserveUnit, type BillingClient, type MeteredUnit } from './metering.js';

export type VerifierClient = ClientOf<typeof verifierV1.VerifierService>;

export interface VerifyDeps {
  blobs: BlobStore;
  verifier: VerifierClient;
  billing: BillingClient;
  /** Authenticated uploads above this size are verified as jobs; so is any whose client asked for it. */
  syncVerifyMaxBytes: number;
}

/** A validated POST /v1/verify: who asks (no tenant: the public verify), what, and how it wants the answer. */
export interface VerifyRequest {
  tenant: Tenant | undefined;
  input: verifierV1.VerifyRequest['input'];
  /** The stored upload when the input is a file, with its first bytes when this request streamed it. */
  upload: { key: string; size: number; head?: Buffer } | undefined;
  /** The client asked for an asynchronous answer (RFC 7240 Prefer: respond-async). */
  respondAsync: boolean;
  /** Called once the upload belongs to a verify job (the verifier deletes it when the job ends). */
  onUploadHandedOver: () => void;
  /** The client asked for the C2PA validation report (crJSON): answered by a synchronous verify only. */
  report?: boolean;
}

export type VerifyOutcome =
  | { kind: 'job'; jobId: string }
  | { kind: 'verified'; result: verifierV1.VerificationResult; /** crJSON text, when asked. */ reportJson?: string };

const VERIFY_METERS: Readonly<Record<string, string>> = {
  image: 'image_verify',
  audio: 'audio_verify',
  video: 'video_verify',
};

/** The meter of an authenticated verify of `modality`; text verifies have no meter in the spec. */
function verifyMeter(modality: string): string | undefined {
  return VERIFY_METERS[modality];
}

/**
 * POST /v1/verify as a use case. Authenticated verifies are metered by modality: an upload's is known up front
 * (reserved before the work, so a tenant out of quota is refused before it runs, and committed by billing from the
 * verify's asset.verified event); an asset_id / manifest_uri's only from the verifier's answer. Public verify is never metered; a failed verify (internal error) never is. A
 * large authenticated upload, or one whose client asked for it, is verified as a job that owns the upload and the
 * reservation.
 */
export class VerifyFiles {
  constructor(private readonly deps: VerifyDeps) {}

  async verify(request: VerifyRequest): Promise<VerifyOutcome> {
    const { deps } = this;
    const { tenant, upload } = request;
    let metered: MeteredUnit | undefined;
    if (tenant && upload) {
      const meter = verifyMeter((await this.uploadModality(upload)) ?? '');
      if (meter) metered = await reserveUnit(deps.billing, tenant, meter);
    }
    if (tenant && upload && (request.respondAsync || upload.size > deps.syncVerifyMaxBytes)) {
      // A job keeps its verdict only: the report comes from the reading of a synchronous verify.
      if (request.report) {
        await metered?.release();
        throw new CairnError(
          'cairn.validation.body_too_large',
          `A validation report is answered by a synchronous verify only: files up to ${deps.syncVerifyMaxBytes} bytes, without Prefer: respond-async.`,
        );
      }
      let jobId: string;
      try {
        ({ jobId } = await deps.verifier.enqueueVerify({
          tenantId: tenant.tenantId,
          uploadBlobKey: upload.key,
          reservationId: metered?.reservationId ?? '',
        }));
      } catch (error) {
        await metered?.release();
        throw error;
      }
      metered?.handOver();
      request.onUploadHandedOver();
      return { kind: 'job', jobId };
    }
    let result: verifierV1.VerificationResult;
    let modality: verifierV1.VerifyResponse['modality'];
    let reportJson = '';
    try {
      const verified = await deps.verifier.verify(
        {
          tenantId: tenant?.tenantId ?? '',
          input: request.input,
          reservationId: metered?.reservationId ?? '',
          includeReport: request.report === true,
        },
        { deadlineMs: 60_000 },
      );
      if (!verified.result) throw new CairnError('cairn.internal_error');
      ({ result, modality, reportJson } = {
        result: verified.result,
        modality: verified.modality,
        reportJson: verified.reportJson,
      });
    } catch (error) {
      await metered?.release();
      throw error;
    }
    // Billing commits the reservation from asset.verified, which the verifier wrote with the verdict: the answer
    // does not wait for a Commit round trip (a verify that failed above released it).
    if (metered) metered.handOver();
    else if (tenant) {
      const meter = verifyMeter(modalities.fromProto(modality));
      if (meter) await (await reserveUnit(deps.billing, tenant, meter)).commit();
    }
    return { kind: 'verified', result, ...(request.report ? { reportJson } : {}) };
  }

  /** The sniffed modality of an uploaded file (its first bytes), or null when it is gone or no known type. */
  private async uploadModality(upload: { key: string; head?: Buffer }): Promise<string | null> {
    const head = upload.head ?? (await uploadHead(this.deps.blobs, upload.key));
    return head ? (sniffMediaType(head)?.modality ?? null) : null;
  }
}
