import type { GenService } from '@bufbuild/protobuf/codegenv2';
import { CairnError } from '@cairn/errors';
import { jobStates, type signerV1, type tenantV1 } from '@cairn/proto';
import type { Logger } from '@cairn/logging';
import type { ServiceClient } from '@cairn/rpc';
import { inSpan } from '@cairn/telemetry';
import type { Tenant, TenantDirectory } from '../adapters/tenant-directory.js';
import type { RedisConcurrencyLimiter } from '../adapters/concurrency-limit.js';
import { requestHash } from '../domain/request-hash.js';
import { presentSignResult } from '../domain/sign-result.js';
import type { SignAnswer, SignRequestStore } from '../store/sign-requests.js';
import { reserveUnit, type BillingClient, type MeteredUnit } from './metering.js';

export type SignerClient = ServiceClient<typeof signerV1.SignerService extends GenService<infer M> ? M : never>;

export interface SignDeps {
  signer: SignerClient;
  tenants: TenantDirectory;
  /** Exactly-once per (tenant, Idempotency-Key): claim, finish, release, abandon. */
  requests: SignRequestStore;
  /** Signs in flight per tenant (SIGN_CONCURRENCY_PER_TENANT). */
  slots: RedisConcurrencyLimiter;
  concurrencyPerTenant: number;
  billing: BillingClient;
  publicBaseUrl: string;
  /** Uploads up to this size are signed while the client waits (200); larger ones become jobs (202). */
  syncMaxBytes: number;
  logger: Logger;
}

/** A validated POST /v1/sign: the stored upload, the form fields, the Idempotency-Key. */
export interface SignRequest {
  tenant: Tenant;
  idempotencyKey: string;
  /** `spent`: a used upload session named again, answerable only from this key's recorded answer. */
  upload: { key: string; size: number; sha256: string; spent?: true };
  recipe: string;
  metadata: Record<string, string>;
  signingCredential?: string;
  /**
   * Called once the upload belongs to a sign job (the signer's worker reads it, then deletes it): from then on the
   * caller must not delete it, whatever happens next.
   */
  onUploadHandedOver: () => void;
}

/** What the client is told: the answer (run now or replayed), or to retry later (the error with its wait). */
export type SignOutcome =
  | { kind: 'answer'; answer: SignAnswer; replayed: boolean }
  | { kind: 'retry_later'; retryAfterSeconds: number; error: CairnError };

/** When a tenant's signs are all running, a slot usually frees within seconds. */
const SIGN_SLOT_RETRY_AFTER_SECONDS = 2;
/** When an earlier attempt's sign is still running in the signer: a sign usually ends within seconds. */
const BUSY_SIGN_RETRY_AFTER_SECONDS = 2;

function recipeSpec(recipe: tenantV1.Recipe): signerV1.RecipeSpec {
  return {
    $typeName: 'cairn.signer.v1.RecipeSpec',
    recipeId: recipe.recipeId,
    mediaTypes: recipe.mediaTypes,
    watermark: recipe.layers?.watermark ?? false,
    softBinding: recipe.layers?.softBinding ?? false,
    anchor: recipe.layers?.anchor ?? false,
    digitalSourceType: recipe.ai?.digitalSourceType ?? '',
    derivedAssetDays: recipe.derivedAssetDays,
    meter: recipe.meter,
  };
}

/**
 * POST /v1/sign as a use case: the recipe and plan rules, the idempotency claim, the tenant's concurrency slot,
 * metering (reserved before, committed by billing from asset.signed, released on failure; never for a replay),
 * and the sign itself, synchronous or as a job.
 */
export class SignAssets {
  readonly #base: string;

  constructor(private readonly deps: SignDeps) {
    this.#base = deps.publicBaseUrl.replace(/\/$/, '');
  }

  async sign(request: SignRequest): Promise<SignOutcome> {
    const { deps } = this;
    const { tenant, idempotencyKey, upload, metadata } = request;
    const recipe = await inSpan('gateway.sign.recipe', () => deps.tenants.getRecipe(request.recipe, tenant.plan));
    if (!recipe || !recipe.available) {
      throw new CairnError(
        'cairn.sign.invalid_recipe',
        recipe
          ? `Recipe ${request.recipe} is not available on the ${tenant.plan} plan.`
          : `Recipe ${request.recipe} does not exist; GET /v1/recipes lists them.`,
      );
    }
    const credentialId = request.signingCredential;
    if (credentialId && tenant.plan !== 'enterprise')
      throw new CairnError(
        'cairn.auth.forbidden',
        'Signing with your own key (signing_credential) is an Enterprise feature.',
      );
    const hash = requestHash({
      file: upload.sha256,
      size: upload.size,
      recipe: recipe.recipeId,
      metadata,
      ...(credentialId ? { credential: credentialId } : {}),
    });
    // The key's claim (Postgres) and the metered unit (billing) are independent round trips, asked together; the
    // claim decides. A replay or a busy key gives the unit back without waiting for it, as a takeover the signer
    // answers `replayed` does (docs/decisions/0020-sign-idempotent-by-asset-id.md). A short transaction claims the key;
    // none is open while the sign runs (docs/decisions/0019-idempotency-claims.md).
    const claimed = inSpan('gateway.sign.claim', () => deps.requests.claim(tenant.tenantId, idempotencyKey, hash));
    const reserved = inSpan('gateway.sign.reserve', () => reserveUnit(deps.billing, tenant, recipe.meter));
    // A refusal (quota, billing down) may arrive while the claim is awaited: it is read below, never unhandled.
    reserved.catch(() => undefined);
    const giveBackUnit = () => void releaseUnit(reserved);
    let claim: Awaited<typeof claimed>;
    try {
      claim = await claimed;
    } catch (error) {
      giveBackUnit();
      throw error;
    }
    if (claim.kind !== 'run') giveBackUnit();
    if (claim.kind === 'busy')
      return {
        kind: 'retry_later',
        retryAfterSeconds: claim.retryAfterSeconds,
        error: new CairnError(
          'cairn.idempotency.in_progress',
          `A sign with this Idempotency-Key is still running; retry after ${claim.retryAfterSeconds} s to get its answer.`,
        ),
      };
    if (claim.kind === 'replay') return { kind: 'answer', answer: claim.answer, replayed: true };

    // Whether a sign of the claim's asset id may have been recorded: then the claim must not be forgotten when this
    // attempt fails (`release`, not `abandon`), or the client's retry would sign a second asset.
    let maybeSigned = claim.takenOver;
    const endClaim = () =>
      maybeSigned
        ? deps.requests.release(tenant.tenantId, idempotencyKey, claim.claimId)
        : deps.requests.abandon(tenant.tenantId, idempotencyKey, claim.claimId);
    if (upload.spent) {
      // No recorded answer for this key and request: the session's file was another request's.
      giveBackUnit();
      await endClaim();
      throw new CairnError(
        'cairn.upload.already_used',
        "This upload was already used; an upload is signed or verified once (a retry with the first sign's Idempotency-Key gets its answer).",
      );
    }

    let slot: Awaited<ReturnType<typeof deps.slots.tryAcquire>>;
    try {
      slot = await inSpan('gateway.sign.slot', () =>
        deps.slots.tryAcquire(`tenant:${tenant.tenantId}`, deps.concurrencyPerTenant),
      );
    } catch (error) {
      giveBackUnit();
      throw error;
    }
    if (!slot) {
      giveBackUnit();
      await endClaim();
      return {
        kind: 'retry_later',
        retryAfterSeconds: SIGN_SLOT_RETRY_AFTER_SECONDS,
        error: new CairnError(
          'cairn.ratelimit.exceeded',
          `This tenant already has ${deps.concurrencyPerTenant} signs running; retry after ${SIGN_SLOT_RETRY_AFTER_SECONDS} s.`,
        ),
      };
    }
    // Released once, as soon as the signer has answered (beside the claim's finish: a Redis and a Postgres round
    // trip, independent) or, whatever happened, before this request ends.
    let slotReleased: Promise<void> | undefined;
    const releaseSlot = () => (slotReleased ??= inSpan('gateway.sign.slot_release', () => slot.release()));
    // Billed only when the sign really runs (a replay's unit was released above): reserved before, committed by
    // billing from asset.signed (or the job's end), released when anything fails.
    let metered: MeteredUnit | undefined;
    // A BYOK sign is metered as byok_sign on top of its modality meter.
    let byok: MeteredUnit | undefined;
    let answer: SignAnswer;
    // The signer answered a sign (or job) of this asset id that was already recorded: billed by that one.
    let replayed = false;
    try {
      metered = await reserved;
      if (credentialId) byok = await reserveUnit(deps.billing, tenant, 'byok_sign');
      const { assetId } = claim;
      const sign = {
        tenantId: tenant.tenantId,
        assetId,
        recipe: recipeSpec(recipe),
        uploadBlobKey: upload.key,
        metadata,
        ...(credentialId ? { signingCredentialId: credentialId } : {}),
        // Named in asset.signed, from which billing commits them.
        reservationId: metered.reservationId,
        byokReservationId: byok?.reservationId ?? '',
      };
      maybeSigned = true;
      if (upload.size <= deps.syncMaxBytes) {
        const result = await this.#askSigner(
          () => deps.signer.sign(sign, { deadlineMs: 120_000 }),
          () => {
            maybeSigned = false;
          },
        );
        replayed = result.replayed;
        answer = { assetId, httpStatus: 200, body: presentSignResult(result) };
      } else {
        const job = await this.#askSigner(
          () => deps.signer.enqueueSign({ sign }),
          () => {
            maybeSigned = false;
          },
        );
        replayed = job.replayed;
        // The signer worker reads it, then deletes it (a replayed job's worker reads the first request's upload,
        // this one stays the caller's to delete).
        if (!replayed) request.onUploadHandedOver();
        answer = {
          assetId,
          httpStatus: 202,
          body: {
            job_id: job.jobId,
            status: jobStates.fromProto(job.status),
            poll_url: `${this.#base}/v1/jobs/${job.jobId}`,
          },
        };
      }
      // False only when this claim's lease ran out and another request took it over: both asked the signer for
      // the same asset id, which signs it once, so both clients get the same asset.
      const finished = answer;
      // A failed release is thrown where it always was (below, in finally), never taken for a failed sign.
      releaseSlot().catch(() => undefined);
      await inSpan('gateway.sign.finish', () =>
        deps.requests.finish(tenant.tenantId, idempotencyKey, claim.claimId, finished),
      );
    } catch (error) {
      await metered?.release();
      await byok?.release();
      // The key is free again for a retry; if the database cannot say so now, the lease runs out instead.
      await endClaim().catch(() => undefined);
      // An earlier attempt's sign of this asset id is still running in the signer (its gateway died): the
      // client retries, as for a duplicate, and gets that sign's answer.
      if (error instanceof CairnError && error.code === 'cairn.idempotency.in_progress')
        return {
          kind: 'retry_later',
          retryAfterSeconds: BUSY_SIGN_RETRY_AFTER_SECONDS,
          error: new CairnError(
            'cairn.idempotency.in_progress',
            `A sign with this Idempotency-Key is still running; retry after ${BUSY_SIGN_RETRY_AFTER_SECONDS} s to get its answer.`,
          ),
        };
      throw error;
    } finally {
      await releaseSlot();
    }
    if (replayed) {
      // The recorded sign named its own reservations in asset.signed (or its job settles them): these are spare.
      await metered.release();
      await byok?.release();
    } else if (answer.httpStatus === 202) {
      // A job settles its own reservation when it ends (billing reads job.completed / job.failed).
      metered.handOver();
      byok?.handOver();
    } else {
      // The sign is recorded, and asset.signed (written in the same transaction) names these reservations:
      // billing commits them from it (consumer billing-sign-settlement), so the answer does not wait for a
      // Commit round trip. Usage lags the answer by the event's delivery
      // (docs/decisions/0022-billing-settled-from-events.md).
      metered.handOver();
      byok?.handOver();
    }
    // A sign the signer had recorded for this key (its first gateway died before recording the answer) is a
    // replay for the client too.
    return { kind: 'answer', answer, replayed };
  }

  /**
   * Calls the signer; `refused` runs when it refused the sign (a 4xx other than in_progress): then no sign of
   * this asset id is recorded or running, this attempt's or an earlier one's (the signer would have answered
   * the recorded one, or said in_progress). Anything else (unavailable, deadline) may have recorded it.
   */
  async #askSigner<T>(call: () => Promise<T>, refused: () => void): Promise<T> {
    try {
      return await call();
    } catch (error) {
      if (error instanceof CairnError && error.status < 500 && error.code !== 'cairn.idempotency.in_progress')
        refused();
      throw error;
    }
  }
}

/** A unit reserved for a request that will not run: released once reserved (a refused reserve holds nothing). */
async function releaseUnit(reserved: Promise<MeteredUnit>): Promise<void> {
  // A refused reserve holds no unit, and the request answered without it: nothing to release, nothing to report.
  const unit = await reserved.catch(() => undefined);
  await unit?.release();
}
