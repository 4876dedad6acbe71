import { jobUrl } from '@cairn/config';
import { CairnError } from '@cairn/errors';
import { jobStates, type signerV1, type tenantV1 } from '@cairn/proto';
import type { Logger } from '@cairn/logging';
import { inSpan } from '@cairn/telemetry';
import type { Tenant } from './ports.js';
import { requestHash } from '../domain/request-hash.js';
import { presentSignResult } from '../domain/sign-result.js';
import { SignMeter } from './metering.js';
import type {
  ConcurrencySlots,
  Metering,
  RecipeCatalogue,
  SignAnswer,
  SignClaim,
  Signing,
  SignRequests,
} from './ports.js';

export type { SignerClient } from './ports.js';

export interface SignDeps {
  signer: Signing;
  tenants: RecipeCatalogue;
  /** Exactly-once per (tenant, Idempotency-Key): claim, finish, release, abandon. */
  requests: SignRequests;
  /** Signs in flight per tenant (SIGN_CONCURRENCY_PER_TENANT). */
  slots: ConcurrencySlots;
  concurrencyPerTenant: number;
  billing: Metering;
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

/** A claim this request runs the sign under (the store's `run` answer). */
type RunClaim = Extract<SignClaim, { kind: 'run' }>;

/** The sign's answer, and whether the signer answered a sign of this asset id it had already recorded. */
interface Signed {
  answer: SignAnswer;
  replayed: boolean;
}

/** A tenant's concurrency slot, released once however many times it is asked to. */
interface HeldSlot {
  release(): Promise<void>;
}

/**
 * POST /v1/sign as a use case, in the steps its story reads: the recipe (and plan rules), the idempotency claim,
 * the tenant's concurrency slot, the metered units (reserved before, committed by billing from asset.signed,
 * released on failure; never for a replay: `SignMeter`), the sign itself (synchronous or as a job), and the
 * settling of the units.
 */
export class SignAssets {
  constructor(private readonly deps: SignDeps) {}

  async sign(request: SignRequest): Promise<SignOutcome> {
    const recipe = await this.#recipe(request);
    // The key's claim (Postgres) and the metered unit (billing) are independent round trips, asked together; the
    // claim decides. A replay or a busy key gives the unit back without waiting for it, as a takeover the signer
    // answers `replayed` does (docs/decisions/0020-sign-idempotent-by-asset-id.md). A short transaction claims the key;
    // none is open while the sign runs (docs/decisions/0019-idempotency-claims.md).
    const claiming = this.#claim(request, recipe);
    const meter = SignMeter.reserve(this.deps.billing, request.tenant, recipe.meter);
    const claim = await claiming.catch((error: unknown) => {
      meter.giveBack();
      throw error;
    });
    if (claim.kind !== 'run') {
      meter.giveBack();
      if (claim.kind === 'busy') return signStillRunning(claim.retryAfterSeconds);
      return { kind: 'answer', answer: claim.answer, replayed: true };
    }
    const key = new HeldKey(this.deps.requests, request, claim);
    if (request.upload.spent) {
      // No recorded answer for this key and request: the session's file was another request's.
      meter.giveBack();
      await key.end();
      throw new CairnError(
        'cairn.upload.already_used',
        "This upload was already used; an upload is signed or verified once (a retry with the first sign's Idempotency-Key gets its answer).",
      );
    }

    const slot = await this.#slot(request.tenant).catch((error: unknown) => {
      meter.giveBack();
      throw error;
    });
    if (!slot) {
      meter.giveBack();
      await key.end();
      return this.#noSlot();
    }
    let signed: Signed;
    try {
      const reservations = await meter.hold(Boolean(request.signingCredential));
      signed = await this.#signOrEnqueue(request, recipe, key, reservations);
      // False only when this claim's lease ran out and another request took it over: both asked the signer for
      // the same asset id, which signs it once, so both clients get the same asset. The slot goes back beside
      // the finish (a Redis and a Postgres round trip, independent); a failed release is thrown where it always
      // was (below, in finally), never taken for a failed sign.
      slot.release().catch(() => undefined);
      await inSpan('gateway.sign.finish', () => key.finish(signed.answer));
    } catch (error) {
      return await this.#failed(error, meter, key);
    } finally {
      await slot.release();
    }
    await this.#settle(meter, signed.replayed);
    // A sign the signer had recorded for this key (its first gateway died before recording the answer) is a
    // replay for the client too.
    return { kind: 'answer', answer: signed.answer, replayed: signed.replayed };
  }

  /** The recipe, available on the tenant's plan; signing with the tenant's own key needs Enterprise. */
  async #recipe(request: SignRequest): Promise<tenantV1.Recipe> {
    const { tenant } = request;
    const recipe = await inSpan('gateway.sign.recipe', () => this.deps.tenants.getRecipe(request.recipe, tenant.plan));
    if (!recipe || !recipe.available) {
      throw new CairnError(
        'cairn.sign.invalid_recipe',
        recipe
          ? `Recipe ${request.recipe} is not available on the ${tenant.plan} plan.`
          : `Recipe ${request.recipe} does not exist; GET /v1/recipes lists them.`,
      );
    }
    if (request.signingCredential && tenant.plan !== 'enterprise')
      throw new CairnError(
        'cairn.auth.forbidden',
        'Signing with your own key (signing_credential) is an Enterprise feature.',
      );
    return recipe;
  }

  /** Claims the Idempotency-Key for this request's body (file, size, recipe, metadata, credential). */
  #claim(request: SignRequest, recipe: tenantV1.Recipe): Promise<SignClaim> {
    const { tenant, upload, signingCredential: credentialId } = request;
    const hash = requestHash({
      file: upload.sha256,
      size: upload.size,
      recipe: recipe.recipeId,
      metadata: request.metadata,
      ...(credentialId ? { credential: credentialId } : {}),
    });
    return inSpan('gateway.sign.claim', () => this.deps.requests.claim(tenant.tenantId, request.idempotencyKey, hash));
  }

  /**
   * One of the tenant's SIGN_CONCURRENCY_PER_TENANT slots, or null when all are taken. Released once, as soon as
   * the signer has answered or, whatever happened, before the request ends.
   */
  async #slot(tenant: Tenant): Promise<HeldSlot | null> {
    const { slots, concurrencyPerTenant } = this.deps;
    const slot = await inSpan('gateway.sign.slot', () =>
      slots.tryAcquire(`tenant:${tenant.tenantId}`, concurrencyPerTenant),
    );
    if (!slot) return null;
    let released: Promise<void> | undefined;
    return { release: () => (released ??= inSpan('gateway.sign.slot_release', () => slot.release())) };
  }

  #noSlot(): SignOutcome {
    return {
      kind: 'retry_later',
      retryAfterSeconds: SIGN_SLOT_RETRY_AFTER_SECONDS,
      error: new CairnError(
        'cairn.ratelimit.exceeded',
        `This tenant already has ${this.deps.concurrencyPerTenant} signs running; retry after ${SIGN_SLOT_RETRY_AFTER_SECONDS} s.`,
      ),
    };
  }

  /**
   * Asks the signer: uploads up to SYNC_SIGN_MAX_BYTES are signed while the client waits (200), larger ones
   * become jobs (202), whose worker takes the upload over.
   */
  async #signOrEnqueue(
    request: SignRequest,
    recipe: tenantV1.Recipe,
    key: HeldKey,
    reservations: { reservationId: string; byokReservationId: string },
  ): Promise<Signed> {
    const { deps } = this;
    const { assetId } = key;
    const credentialId = request.signingCredential;
    const sign = {
      tenantId: request.tenant.tenantId,
      assetId,
      recipe: recipeSpec(recipe),
      uploadBlobKey: request.upload.key,
      metadata: request.metadata,
      ...(credentialId ? { signingCredentialId: credentialId } : {}),
      // Named in asset.signed, from which billing commits them.
      ...reservations,
    };
    key.maybeSigned = true;
    if (request.upload.size <= deps.syncMaxBytes) {
      const result = await key.askSigner(() => deps.signer.sign(sign, { deadlineMs: 120_000 }));
      return { replayed: result.replayed, answer: { assetId, httpStatus: 200, body: presentSignResult(result) } };
    }
    const job = await key.askSigner(() => deps.signer.enqueueSign({ sign }));
    // The signer worker reads it, then deletes it (a replayed job's worker reads the first request's upload,
    // this one stays the caller's to delete).
    if (!job.replayed) request.onUploadHandedOver();
    const body = {
      job_id: job.jobId,
      status: jobStates.fromProto(job.status),
      poll_url: jobUrl(this.deps.publicBaseUrl, job.jobId),
    };
    return { replayed: job.replayed, answer: { assetId, httpStatus: 202, body } };
  }

  /** A sign that failed: its units and its key go back, and the error reaches the client. */
  async #failed(error: unknown, meter: SignMeter, key: HeldKey): Promise<SignOutcome> {
    await meter.release();
    // The key is free again for a retry; if the database cannot say so now, the lease runs out instead.
    await key.end().catch(() => undefined);
    // An earlier attempt's sign of this asset id is still running in the signer (its gateway died): the
    // client retries, as for a duplicate, and gets that sign's answer.
    if (error instanceof CairnError && error.code === 'cairn.idempotency.in_progress')
      return signStillRunning(BUSY_SIGN_RETRY_AFTER_SECONDS);
    throw error;
  }

  /**
   * A sign that ran: its units are billing's from the event it recorded (asset.signed, or the job's end). When
   * the signer answered a recorded sign, that one named its own reservations: these are spare.
   */
  async #settle(meter: SignMeter, replayed: boolean): Promise<void> {
    if (replayed) await meter.release();
    else meter.handOver();
  }
}

/** The retry-later answer while a sign with this Idempotency-Key is still running somewhere. */
function signStillRunning(retryAfterSeconds: number): SignOutcome {
  return {
    kind: 'retry_later',
    retryAfterSeconds,
    error: new CairnError(
      'cairn.idempotency.in_progress',
      `A sign with this Idempotency-Key is still running; retry after ${retryAfterSeconds} s to get its answer.`,
    ),
  };
}

/** This request's hold on its Idempotency-Key, from the claim to its finish, release or abandon. */
class HeldKey {
  readonly claimId: string;
  readonly assetId: string;
  /**
   * Whether a sign of the claim's asset id may have been recorded: then the claim must not be forgotten when this
   * attempt fails (`release`, not `abandon`), or the client's retry would sign a second asset.
   */
  maybeSigned: boolean;

  constructor(
    private readonly requests: SignRequests,
    private readonly request: SignRequest,
    claim: RunClaim,
  ) {
    this.claimId = claim.claimId;
    this.assetId = claim.assetId;
    this.maybeSigned = claim.takenOver;
  }

  finish(answer: SignAnswer): Promise<boolean> {
    return this.requests.finish(this.request.tenant.tenantId, this.request.idempotencyKey, this.claimId, answer);
  }

  /** Frees the key for a retry: kept under the same asset id when a sign may be recorded, forgotten otherwise. */
  end(): Promise<void> {
    const { tenant, idempotencyKey } = this.request;
    return this.maybeSigned
      ? this.requests.release(tenant.tenantId, idempotencyKey, this.claimId)
      : this.requests.abandon(tenant.tenantId, idempotencyKey, this.claimId);
  }

  /**
   * Calls the signer. When it refused the sign (a 4xx other than in_progress), no sign of this asset id is
   * recorded or running, this attempt's or an earlier one's (the signer would have answered the recorded one, or
   * said in_progress). Anything else (unavailable, deadline) may have recorded it.
   */
  async askSigner<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      if (error instanceof CairnError && error.status < 500 && error.code !== 'cairn.idempotency.in_progress')
        this.maybeSigned = false;
      throw error;
    }
  }
}
