// The sign use case (app/sign.ts) over in-memory fakes of its ports (app/ports.ts): what happens to the billing
// reservations, the Idempotency-Key and the tenant's slot on each path. The end-to-end tests (test/sign-api.test.ts,
// test/byok.test.ts, test/chaos-billing.test.ts) run the same paths through the real services.
import { describe, expect, it } from '@jest/globals';
import { create } from '@bufbuild/protobuf';
import { CairnError } from '@cairn/errors';
import { billingV1, commonV1, signerV1, tenantV1 } from '@cairn/proto';
import { createLogger } from '@cairn/logging';
import type { Tenant } from '../src/adapters/tenant-directory.js';
import type {
  ConcurrencySlots,
  Metering,
  RecipeCatalogue,
  SignAnswer,
  SignClaim,
  Signing,
  SignRequests,
} from '../src/app/ports.js';
import { SignAssets, type SignOutcome, type SignRequest } from '../src/app/sign.js';

const SYNC_MAX_BYTES = 1000;

/** Billing: each reservation and what became of it; `refuse` makes the next reserve of that meter fail. */
class FakeBilling implements Metering {
  readonly units = new Map<string, { meter: string; state: 'reserved' | 'committed' | 'released' }>();
  readonly refuse = new Map<string, CairnError>();

  reserve: Metering['reserve'] = async (request) => {
    const refusal = this.refuse.get(request.meter ?? '');
    if (refusal) throw refusal;
    const reservationId = `rsv_${this.units.size + 1}`;
    this.units.set(reservationId, { meter: request.meter ?? '', state: 'reserved' });
    return create(billingV1.ReserveResponseSchema, { reservationId });
  };

  commit: Metering['commit'] = async (request) => {
    this.#settle(request.reservationId ?? '', 'committed');
    return create(billingV1.CommitResponseSchema, { status: 'committed' });
  };

  release: Metering['release'] = async (request) => {
    this.#settle(request.reservationId ?? '', 'released');
    return create(billingV1.ReleaseResponseSchema, { status: 'released' });
  };

  states(): string[] {
    return [...this.units.values()].map((unit) => `${unit.meter}:${unit.state}`);
  }

  #settle(reservationId: string, state: 'committed' | 'released'): void {
    const unit = this.units.get(reservationId);
    if (!unit) throw new CairnError('cairn.not_found', `no reservation ${reservationId}`);
    if (unit.state === 'reserved') unit.state = state;
  }
}

/** The idempotency store's row state machine, in memory. */
class FakeRequests implements SignRequests {
  readonly rows = new Map<
    string,
    { hash: string; claimId: string; assetId: string; state: 'running' | 'lapsed' | 'done'; answer?: SignAnswer }
  >();
  #seq = 0;

  async claim(tenantId: string, idempotencyKey: string, requestHash: string): Promise<SignClaim> {
    const key = `${tenantId}/${idempotencyKey}`;
    const row = this.rows.get(key);
    if (row && row.hash !== requestHash) throw new CairnError('cairn.sign.idempotency_conflict');
    if (row?.state === 'done' && row.answer) return { kind: 'replay', answer: row.answer };
    if (row?.state === 'running') return { kind: 'busy', retryAfterSeconds: 2 };
    const claimId = `c${++this.#seq}`;
    const assetId = row?.assetId ?? `a_${this.#seq}`;
    this.rows.set(key, { hash: requestHash, claimId, assetId, state: 'running' });
    return { kind: 'run', claimId, assetId, takenOver: row !== undefined };
  }

  async finish(tenantId: string, idempotencyKey: string, claimId: string, answer: SignAnswer): Promise<boolean> {
    const row = this.#own(tenantId, idempotencyKey, claimId);
    if (!row) return false;
    row.state = 'done';
    row.answer = answer;
    return true;
  }

  async release(tenantId: string, idempotencyKey: string, claimId: string): Promise<void> {
    const row = this.#own(tenantId, idempotencyKey, claimId);
    if (row) row.state = 'lapsed';
  }

  async abandon(tenantId: string, idempotencyKey: string, claimId: string): Promise<void> {
    if (this.#own(tenantId, idempotencyKey, claimId)) this.rows.delete(`${tenantId}/${idempotencyKey}`);
  }

  #own(tenantId: string, idempotencyKey: string, claimId: string) {
    const row = this.rows.get(`${tenantId}/${idempotencyKey}`);
    return row?.claimId === claimId ? row : undefined;
  }
}

/** Concurrency slots per subject, in memory. */
class FakeSlots implements ConcurrencySlots {
  readonly held = new Map<string, number>();

  async tryAcquire(subject: string, limit: number) {
    const held = this.held.get(subject) ?? 0;
    if (held >= limit) return null;
    this.held.set(subject, held + 1);
    let released = false;
    return {
      release: async () => {
        if (released) return;
        released = true;
        this.held.set(subject, (this.held.get(subject) ?? 1) - 1);
      },
    };
  }
}

/** The signer: answers each sign (or job) it is asked for, or throws what the test sets. */
class FakeSigner implements Signing {
  readonly signs: signerV1.SignRequest[] = [];
  failure: CairnError | undefined;
  replayed = false;

  sign: Signing['sign'] = async (request) => {
    const sign = create(signerV1.SignRequestSchema, request);
    this.signs.push(sign);
    if (this.failure) throw this.failure;
    return create(signerV1.SignResponseSchema, {
      assetId: sign.assetId,
      manifestId: `m_${sign.assetId}`,
      mediaType: 'image/png',
      replayed: this.replayed,
    });
  };

  enqueueSign: Signing['enqueueSign'] = async (request) => {
    const sign = create(signerV1.SignRequestSchema, request.sign);
    this.signs.push(sign);
    if (this.failure) throw this.failure;
    return create(signerV1.EnqueueSignResponseSchema, {
      jobId: `j_${sign.assetId}`,
      status: commonV1.JobState.QUEUED,
      replayed: this.replayed,
    });
  };
}

const recipes: RecipeCatalogue = {
  getRecipe: async (recipeId) =>
    recipeId === 'cairn-standard'
      ? create(tenantV1.RecipeSchema, { recipeId, available: true, meter: 'image_sign', mediaTypes: ['image/png'] })
      : null,
};

function tenant(plan = 'developer'): Tenant {
  return {
    tenantId: 't_1',
    name: 'Tenant',
    plan,
    parentTenantId: null,
    spendingCapUsd: null,
    auditRetentionDays: 30,
    auditRetentionDaysMax: 30,
    rateLimitRps: 10,
    rateLimitDaily: 1000,
    createdAt: new Date(0),
    updatedAt: new Date(0),
  };
}

function world(concurrencyPerTenant = 2) {
  const billing = new FakeBilling();
  const requests = new FakeRequests();
  const slots = new FakeSlots();
  const signer = new FakeSigner();
  const signing = new SignAssets({
    signer,
    tenants: recipes,
    requests,
    slots,
    concurrencyPerTenant,
    billing,
    publicBaseUrl: 'https://cairn.example/',
    syncMaxBytes: SYNC_MAX_BYTES,
    logger: createLogger({ service: 'gateway-test', level: 'silent' }),
  });
  let handedOver = 0;
  const request = (overrides: Partial<SignRequest> = {}): SignRequest => ({
    tenant: tenant(),
    idempotencyKey: 'key-1',
    upload: { key: 'uploads/t_1/u1', size: 100, sha256: 'ab'.repeat(32) },
    recipe: 'cairn-standard',
    metadata: {},
    onUploadHandedOver: () => {
      handedOver += 1;
    },
    ...overrides,
  });
  return { billing, requests, slots, signer, signing, request, handedOver: () => handedOver };
}

/** Lets the fire-and-forget give-backs (a unit released once its reserve answers) run. */
const settled = () => new Promise((resolve) => setImmediate(resolve));

const answerOf = (outcome: SignOutcome) => {
  if (outcome.kind !== 'answer') throw new Error(`expected an answer, got ${outcome.kind}`);
  return outcome;
};

describe('SignAssets.sign', () => {
  it('signs a small upload while the client waits, naming its reservation, and hands the unit to billing', async () => {
    const w = world();
    const outcome = answerOf(await w.signing.sign(w.request()));
    expect(outcome.replayed).toBe(false);
    expect(outcome.answer.httpStatus).toBe(200);
    expect(outcome.answer.body).toMatchObject({ asset_id: outcome.answer.assetId });
    // Billing commits it from asset.signed, which names the reservation: the gateway neither commits nor releases it.
    expect(w.signer.signs[0]?.reservationId).toBe('rsv_1');
    expect(w.billing.states()).toEqual(['image_sign:reserved']);
    expect(w.slots.held.get('tenant:t_1')).toBe(0);
    // The same key and body again: the recorded answer, and the replay's unit goes back.
    const replay = answerOf(await w.signing.sign(w.request()));
    await settled();
    expect(replay).toEqual({ kind: 'answer', answer: outcome.answer, replayed: true });
    expect(w.signer.signs).toHaveLength(1);
    expect(w.billing.states()).toEqual(['image_sign:reserved', 'image_sign:released']);
  });

  it('releases the reservation and forgets the key when the signer refuses the sign', async () => {
    const w = world();
    w.signer.failure = new CairnError('cairn.sign.unsupported_mime', 'refused');
    await expect(w.signing.sign(w.request())).rejects.toMatchObject({ code: 'cairn.sign.unsupported_mime' });
    expect(w.billing.states()).toEqual(['image_sign:released']);
    // No sign of that asset id can be recorded: the key is free for another body.
    expect(w.requests.rows.size).toBe(0);
    expect(w.slots.held.get('tenant:t_1')).toBe(0);
  });

  it('releases the reservation but keeps the key under its asset id when the signer may have signed', async () => {
    const w = world();
    w.signer.failure = new CairnError('cairn.unavailable', 'signer down');
    await expect(w.signing.sign(w.request())).rejects.toMatchObject({ code: 'cairn.unavailable' });
    expect(w.billing.states()).toEqual(['image_sign:released']);
    const firstAssetId = w.signer.signs[0]?.assetId;
    // The retry signs under the same asset id, so the signer answers the recorded sign instead of signing twice.
    w.signer.failure = undefined;
    const retry = answerOf(await w.signing.sign(w.request()));
    expect(retry.answer.assetId).toBe(firstAssetId);
    expect(w.signer.signs[1]?.assetId).toBe(firstAssetId);
  });

  it('answers retry-later and releases the unit when an earlier attempt of the same asset is still signing', async () => {
    const w = world();
    w.signer.failure = new CairnError('cairn.idempotency.in_progress', 'busy');
    const outcome = await w.signing.sign(w.request());
    expect(outcome).toMatchObject({ kind: 'retry_later', retryAfterSeconds: 2 });
    expect(outcome.kind === 'retry_later' && outcome.error.code).toBe('cairn.idempotency.in_progress');
    expect(w.billing.states()).toEqual(['image_sign:released']);
  });

  it('releases the units when the signer answers a sign it had already recorded (billed by that one)', async () => {
    const w = world();
    w.signer.replayed = true;
    const outcome = answerOf(await w.signing.sign(w.request()));
    expect(outcome.replayed).toBe(true);
    expect(w.billing.states()).toEqual(['image_sign:released']);
  });

  it('enqueues a large upload as a job, hands the upload and the unit over, and answers 202', async () => {
    const w = world();
    const outcome = answerOf(
      await w.signing.sign(w.request({ upload: { key: 'u', size: SYNC_MAX_BYTES + 1, sha256: 'cd'.repeat(32) } })),
    );
    expect(outcome.answer.httpStatus).toBe(202);
    expect(outcome.answer.body).toMatchObject({
      status: 'queued',
      poll_url: `https://cairn.example/v1/jobs/j_${outcome.answer.assetId}`,
    });
    expect(w.handedOver()).toBe(1);
    expect(w.billing.states()).toEqual(['image_sign:reserved']);
  });

  it('gives the unit back and forgets the key when every slot of the tenant is taken', async () => {
    const w = world(1);
    const held = await w.slots.tryAcquire('tenant:t_1', 1);
    const outcome = await w.signing.sign(w.request());
    await settled();
    expect(outcome).toMatchObject({ kind: 'retry_later', retryAfterSeconds: 2 });
    expect(outcome.kind === 'retry_later' && outcome.error.code).toBe('cairn.ratelimit.exceeded');
    expect(w.billing.states()).toEqual(['image_sign:released']);
    expect(w.requests.rows.size).toBe(0);
    expect(w.signer.signs).toHaveLength(0);
    await held?.release();
  });

  it('refuses a sign over quota without asking the signer, and frees the key and the slot', async () => {
    const w = world();
    w.billing.refuse.set('image_sign', new CairnError('cairn.billing.quota_exceeded', 'over quota'));
    await expect(w.signing.sign(w.request())).rejects.toMatchObject({ code: 'cairn.billing.quota_exceeded' });
    expect(w.signer.signs).toHaveLength(0);
    expect(w.requests.rows.size).toBe(0);
    expect(w.slots.held.get('tenant:t_1')).toBe(0);
  });

  it('meters a BYOK sign as byok_sign on top, and releases the modality unit when byok_sign is refused', async () => {
    const w = world();
    const enterprise = { tenant: tenant('enterprise'), signingCredential: 'cred_1' };
    const outcome = answerOf(await w.signing.sign(w.request(enterprise)));
    expect(outcome.answer.httpStatus).toBe(200);
    expect(w.signer.signs[0]).toMatchObject({ reservationId: 'rsv_1', byokReservationId: 'rsv_2' });
    expect(w.billing.states()).toEqual(['image_sign:reserved', 'byok_sign:reserved']);

    w.billing.refuse.set('byok_sign', new CairnError('cairn.billing.quota_exceeded', 'no byok units'));
    await expect(w.signing.sign(w.request({ ...enterprise, idempotencyKey: 'key-2' }))).rejects.toMatchObject({
      code: 'cairn.billing.quota_exceeded',
    });
    expect(w.billing.states()).toEqual(['image_sign:reserved', 'byok_sign:reserved', 'image_sign:released']);
  });

  it('refuses a BYOK sign below Enterprise and an unknown recipe before anything is reserved', async () => {
    const w = world();
    await expect(w.signing.sign(w.request({ signingCredential: 'cred_1' }))).rejects.toMatchObject({
      code: 'cairn.auth.forbidden',
    });
    await expect(w.signing.sign(w.request({ recipe: 'nope' }))).rejects.toMatchObject({
      code: 'cairn.sign.invalid_recipe',
    });
    expect(w.billing.units.size).toBe(0);
    expect(w.requests.rows.size).toBe(0);
  });

  it('refuses a spent upload with no recorded answer, giving the unit back and forgetting the key', async () => {
    const w = world();
    const outcome = w.signing.sign(w.request({ upload: { key: 'u', size: 10, sha256: 'ef'.repeat(32), spent: true } }));
    await expect(outcome).rejects.toMatchObject({ code: 'cairn.upload.already_used' });
    await settled();
    expect(w.billing.states()).toEqual(['image_sign:released']);
    expect(w.requests.rows.size).toBe(0);
  });
});
