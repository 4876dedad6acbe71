import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFile } from 'node:fs/promises';
import { createConnection } from 'node:net';
import pg from 'pg';
import sharp from 'sharp';
import { newApiKey, parseApiKey } from '@cairn/ids';
import { databaseUrl, freePort, PG_ADMIN_URL, waitFor } from '@cairn/testing';
import { databaseRole } from '../packages/config/src/index.js';
import { spawnService, type ServiceProcess } from './support/process.js';
import { multipart, onboard, startStack, type Stack } from './support/stack.js';
import { SHARED_DIR } from '../packages/testing/src/shared.js';

// docs/decisions/0019-idempotency-claims.md. The gateway gets a pool of 3 connections. Signs are made slow for real:
// the watermark service runs as its own process and is frozen (SIGSTOP), so every watermarking sign waits on it, in
// flight, until the test thaws it (SIGCONT). Nothing here depends on how long anything takes.

const CONCURRENCY = 4;
const AUTH_FAILURES = 20;

let stack: Stack;
let watermark: ServiceProcess;
let admin: pg.Client;
let photo: Buffer;

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.once('connect', () => (socket.destroy(), resolve(true)));
    socket.once('error', () => resolve(false));
  });
}

const freeze = () => watermark.child.kill('SIGSTOP');
const thaw = () => watermark.child.kill('SIGCONT');

beforeAll(async () => {
  const watermarkPort = await freePort();
  stack = await startStack(['gateway', 'signer'], {
    DATABASE_POOL_MAX: '3',
    SIGN_CONCURRENCY_PER_TENANT: String(CONCURRENCY),
    AUTH_FAILURES_PER_MINUTE: String(AUTH_FAILURES),
    ONBOARD_RATE_LIMIT_PER_MINUTE: '1000',
    WATERMARK_GRPC_ADDR: `127.0.0.1:${watermarkPort}`,
  });
  watermark = spawnService('watermark', {
    ...stack.env,
    DATABASE_URL: databaseUrl(PG_ADMIN_URL, stack.sandbox.databaseName, databaseRole('watermark')),
    GRPC_PORT: String(watermarkPort),
    OPS_PORT: '0',
  });
  await waitFor('the watermark process listening', () => listening(watermarkPort), 60_000, 100);
  admin = await stack.sandbox.adminClient();
  photo = await sharp(await readFile(`${SHARED_DIR}/fixtures/photos/chelsea.png`))
    .jpeg({ quality: 85 })
    .toBuffer();
}, 180_000);

afterAll(async () => {
  if (watermark) {
    thaw();
    watermark.kill();
    await watermark.exit;
  }
  await admin?.end();
  await stack?.stop();
});

/**
 * Freezes the watermark service, starts a sign with `key` and waits until it has claimed the key: the window in
 * which a retry meets that sign still running. Thaws when `body` ends, whatever it did (it may thaw earlier).
 */
async function whileFirstSignRuns(
  apiKey: string,
  key: string,
  body: (first: Promise<Response>) => Promise<void>,
): Promise<void> {
  freeze();
  try {
    const first = sign(apiKey, key);
    await waitFor(
      'the first sign to claim its key',
      async () => (await signState(key)) === 'in_progress' || undefined,
      60_000,
      50,
    );
    await body(first);
  } finally {
    thaw();
  }
}

function sign(key: string, idempotencyKey: string, recipe = 'image-genai-v1', metadata?: Record<string, string>) {
  const fields: Record<string, string> = { recipe, ...(metadata ? { metadata: JSON.stringify(metadata) } : {}) };
  return stack.request('/v1/sign', {
    method: 'POST',
    key,
    headers: { 'idempotency-key': idempotencyKey },
    body: multipart(fields, { field: 'asset', bytes: photo, name: 'a.jpg', type: 'image/jpeg' }),
  });
}

async function code(res: Response): Promise<string> {
  expect(res.headers.get('content-type')).toContain('application/problem+json');
  return ((await res.json()) as { code: string }).code;
}

/** The state of a sign's idempotency row (read as the database owner): a sync point, "the sign has started". */
async function signState(idempotencyKey: string): Promise<string | undefined> {
  const { rows } = await admin.query<{ state: string }>(
    'select state from gateway.sign_requests where idempotency_key = $1',
    [idempotencyKey],
  );
  return rows[0]?.state;
}

describe('slow signs of one tenant', () => {
  it('hold no database connection: other tenants are served, and past the per-tenant limit a sign answers 429', async () => {
    const a = await onboard(stack);
    const b = await onboard(stack);
    freeze();
    try {
      // Ten at once from A: four take the tenant's slots and wait on the frozen watermark service, six are refused.
      const settled: Response[] = [];
      const ten = Array.from({ length: 10 }, () =>
        sign(a.api_key, crypto.randomUUID()).then((res) => (settled.push(res), res)),
      );
      await waitFor(
        'the six signs past the limit to be answered',
        async () => settled.length >= 10 - CONCURRENCY || undefined,
        60_000,
        50,
      );
      expect(settled).toHaveLength(10 - CONCURRENCY);
      for (const res of settled) {
        expect(res.status).toBe(429);
        expect(Number(res.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
        expect(await code(res)).toBe('cairn.ratelimit.exceeded');
      }

      // Four signs in flight on a pool of three: another tenant still reads its usage and signs (a recipe
      // without the watermark, so its sign does not wait on the frozen service).
      const usage = await stack.request('/v1/usage', { key: b.api_key });
      expect(usage.status).toBe(200);
      const bSign = await sign(b.api_key, crypto.randomUUID(), 'image-capture-v1');
      expect(bSign.status).toBe(200);
      expect(((await bSign.json()) as { asset_id: string }).asset_id).toMatch(/^a_/);
      // A itself is served too, for anything but a fifth concurrent sign.
      expect((await stack.request('/v1/usage', { key: a.api_key })).status).toBe(200);
      const fifth = await sign(a.api_key, crypto.randomUUID(), 'image-capture-v1');
      expect(fifth.status).toBe(429);
      expect(await code(fifth)).toBe('cairn.ratelimit.exceeded');

      thaw();
      const answers = await Promise.all(ten);
      expect(answers.filter((res) => res.status === 200)).toHaveLength(CONCURRENCY);
      // The slots are released when the signs end: A signs again.
      expect((await sign(a.api_key, crypto.randomUUID(), 'image-capture-v1')).status).toBe(200);
    } finally {
      thaw();
    }
  }, 120_000);

  it('a duplicate Idempotency-Key answers 409 in_progress while the first runs, then the stored answer', async () => {
    const a = await onboard(stack);
    const key = crypto.randomUUID();
    await whileFirstSignRuns(a.api_key, key, async (first) => {
      const duplicate = await sign(a.api_key, key);
      expect(duplicate.status).toBe(409);
      expect(Number(duplicate.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(await code(duplicate)).toBe('cairn.idempotency.in_progress');
      // The same key with another body is still the conflict it always was, running or not.
      const other = await sign(a.api_key, key, 'image-genai-v1', { generator: 'Other' });
      expect(other.status).toBe(409);
      expect(await code(other)).toBe('cairn.sign.idempotency_conflict');

      thaw();
      const answered = await first;
      expect(answered.status).toBe(200);
      const body = (await answered.json()) as { asset_id: string };
      const replay = await sign(a.api_key, key);
      expect(replay.status).toBe(200);
      expect(replay.headers.get('idempotent-replayed')).toBe('true');
      expect(((await replay.json()) as { asset_id: string }).asset_id).toBe(body.asset_id);
    });
  }, 120_000);

  it('a sign whose gateway died mid-sign (its claim past its lease) is taken over by a retry with the same key', async () => {
    const a = await onboard(stack);
    // A finished sign of the same upload gives the request hash the gateway computes for it.
    const first = crypto.randomUUID();
    expect((await sign(a.api_key, first)).status).toBe(200);
    const { rows } = await admin.query<{ request_hash: string }>(
      'select request_hash from gateway.sign_requests where idempotency_key = $1',
      [first],
    );
    const hash = rows[0]!.request_hash;
    // What a gateway killed mid-sign leaves: a claim, in_progress, that nobody will finish, its lease run out
    // (180 s in production; set in the past here, by the database's clock, which is the one leases are read on).
    const orphan = crypto.randomUUID();
    await admin.query(
      `insert into gateway.sign_requests (tenant_id, idempotency_key, request_hash, asset_id, http_status, response, state, claim_id, lease_expires_at)
       values ($1, $2, $3, '', 0, '{}', 'in_progress', 'dead-gateway', now() - interval '1 second')`,
      [a.tenant_id, orphan, hash],
    );
    const retried = await sign(a.api_key, orphan);
    expect(retried.status).toBe(200);
    expect(retried.headers.get('idempotent-replayed')).toBeNull();
    expect(await signState(orphan)).toBe('done');
  }, 120_000);
});

/** The tenant's billing reservations by status (read as the database owner). */
async function reservations(tenantId: string): Promise<Record<string, number>> {
  const { rows } = await admin.query<{ status: string; n: number }>(
    'select status, count(*)::int as n from billing.reservations where tenant_id = $1 group by 1',
    [tenantId],
  );
  return Object.fromEntries(rows.map((r) => [r.status, r.n]));
}

async function assetsOf(tenantId: string): Promise<string[]> {
  const { rows } = await admin.query<{ asset_id: string }>('select asset_id from signer.assets where tenant_id = $1', [
    tenantId,
  ]);
  return rows.map((r) => r.asset_id);
}

describe('a gateway that died mid-sign (kill -9 must not sign twice)', () => {
  it('the retry that takes its claim over answers the asset the signer recorded, not a second one, billed once', async () => {
    const a = await onboard(stack);
    const key = crypto.randomUUID();
    const first = await sign(a.api_key, key);
    expect(first.status).toBe(200);
    const signed = (await first.json()) as { asset_id: string; manifest_id: string };
    await waitFor('the first sign billed', async () => (await reservations(a.tenant_id)).committed === 1, 30_000, 100);
    // What a gateway killed after the signer recorded the sign, before it recorded the answer, leaves: its claim,
    // in_progress with the asset id it chose, its lease run out (set in the past, on the database's clock).
    await admin.query(
      `update gateway.sign_requests set state = 'in_progress', http_status = 0, response = '{}',
         claim_id = 'dead-gateway', lease_expires_at = now() - interval '1 second'
       where tenant_id = $1 and idempotency_key = $2`,
      [a.tenant_id, key],
    );
    const retried = await sign(a.api_key, key);
    expect(retried.status).toBe(200);
    expect(retried.headers.get('idempotent-replayed')).toBe('true');
    const body = (await retried.json()) as { asset_id: string; manifest_id: string };
    expect(body).toMatchObject({ asset_id: signed.asset_id, manifest_id: signed.manifest_id });
    expect(await signState(key)).toBe('done');
    expect(await assetsOf(a.tenant_id)).toEqual([signed.asset_id]);
    // The takeover reserved a unit before it knew; it released it: one unit committed, by the one sign.
    const billed = await reservations(a.tenant_id);
    expect(billed.committed).toBe(1);
    expect(billed.released).toBe(1);
  }, 120_000);

  it('a retry while the first sign still runs in the signer is told in_progress, then gets that sign', async () => {
    const a = await onboard(stack);
    const key = crypto.randomUUID();
    await whileFirstSignRuns(a.api_key, key, async (first) => {
      // Its gateway "dies": the lease runs out while the signer still works on the sign (watermark frozen).
      await admin.query(
        `update gateway.sign_requests set claim_id = 'dead-gateway', lease_expires_at = now() - interval '1 second'
         where tenant_id = $1 and idempotency_key = $2`,
        [a.tenant_id, key],
      );
      const early = await sign(a.api_key, key);
      expect(early.status).toBe(409);
      expect(await code(early)).toBe('cairn.idempotency.in_progress');
      expect(Number(early.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);

      thaw();
      const answered = await first;
      // The first request's own answer is still the sign it made (its finish matches no claim any more).
      expect(answered.status).toBe(200);
      const { asset_id } = (await answered.json()) as { asset_id: string };
      const retried = await sign(a.api_key, key);
      expect(retried.status).toBe(200);
      expect(((await retried.json()) as { asset_id: string }).asset_id).toBe(asset_id);
      expect(await assetsOf(a.tenant_id)).toEqual([asset_id]);
      await waitFor('the sign billed', async () => (await reservations(a.tenant_id)).committed === 1, 30_000, 100);
      expect((await reservations(a.tenant_id)).committed).toBe(1);
    });
  }, 120_000);
});

describe('failed authentications', () => {
  it('past the limit an address is refused before any key lookup; another address with a good key is served', async () => {
    const tenant = await onboard(stack);
    const attacker = { 'x-forwarded-for': '203.0.113.7' };
    // Malformed keys (refused without the database) and well-formed unknown ones count alike.
    for (let i = 0; i < AUTH_FAILURES; i += 1) {
      const key = i % 2 === 0 ? 'not-a-cairn-key' : newApiKey().apiKey;
      const res = await stack.request('/v1/usage', { key, headers: attacker });
      expect(res.status).toBe(401);
    }
    const refused = await stack.request('/v1/usage', { key: 'not-a-cairn-key', headers: attacker });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(await code(refused)).toBe('cairn.ratelimit.exceeded');
    expect((await stack.request('/v1/usage', { key: newApiKey().apiKey, headers: attacker })).status).toBe(429);
    // A key never seen from that address waits: it cannot be told apart from a guess without the database.
    expect((await stack.request('/v1/usage', { key: tenant.api_key, headers: attacker })).status).toBe(429);
    // The optional-key verify is guarded the same way.
    expect(
      (
        await stack.request('/v1/verify/urn:uuid:00000000-0000-0000-0000-000000000000', {
          key: 'not-a-cairn-key',
          headers: attacker,
        })
      ).status,
    ).toBe(429);

    expect(
      (await stack.request('/v1/usage', { key: tenant.api_key, headers: { 'x-forwarded-for': '203.0.113.8' } })).status,
    ).toBe(200);
    // Requests without a key are not this limit's business.
    expect((await stack.request('/v1/recipes', { headers: attacker })).status).toBe(401);
  });

  it("one client's guesses do not lock out a key already working behind the same address, only guesses at its id do", async () => {
    const working = await onboard(stack);
    const egress = { 'x-forwarded-for': '203.0.113.9' };
    // The company's integration authenticates from its egress before a compromised machine behind it starts guessing.
    expect((await stack.request('/v1/usage', { key: working.api_key, headers: egress })).status).toBe(200);
    for (let i = 0; i < AUTH_FAILURES; i += 1)
      expect((await stack.request('/v1/usage', { key: newApiKey().apiKey, headers: egress })).status).toBe(401);
    expect((await stack.request('/v1/usage', { key: newApiKey().apiKey, headers: egress })).status).toBe(429);
    expect((await stack.request('/v1/usage', { key: working.api_key, headers: egress })).status).toBe(200);

    // Guessing the secret behind that very key id is limited per key id: then the key itself waits there too.
    const { keyId } = parseApiKey(working.api_key)!;
    const guess = `cairn_sk_${keyId}_${newApiKey().secret}`;
    for (let i = 0; i < AUTH_FAILURES; i += 1)
      expect((await stack.request('/v1/usage', { key: guess, headers: egress })).status).toBe(401);
    const locked = await stack.request('/v1/usage', { key: working.api_key, headers: egress });
    expect(locked.status).toBe(429);
    expect(await code(locked)).toBe('cairn.ratelimit.exceeded');
    // Elsewhere the key is untouched.
    expect(
      (await stack.request('/v1/usage', { key: working.api_key, headers: { 'x-forwarded-for': '203.0.113.10' } }))
        .status,
    ).toBe(200);
  });
});

describe('onboarding', () => {
  it('a declined payment frees the Idempotency-Key: the retry with a good card creates the tenant, once', async () => {
    const key = crypto.randomUUID();
    const body = { email: 'pay@example.com', tenant_name: 'Pay Later', plan: 'developer' };
    const declined = await stack.request('/v1/onboard', {
      method: 'POST',
      headers: { 'idempotency-key': key },
      json: { ...body, payment_method_id: 'pm_card_chargeDeclined' },
    });
    expect(declined.status).toBe(402);
    expect(await code(declined)).toBe('cairn.onboard.payment_declined');

    const created = await stack.request('/v1/onboard', {
      method: 'POST',
      headers: { 'idempotency-key': key },
      json: { ...body, payment_method_id: 'pm_card_visa' },
    });
    expect(created.status).toBe(201);
    const tenant = (await created.json()) as { tenant_id: string; api_key: string };
    const replay = await stack.request('/v1/onboard', {
      method: 'POST',
      headers: { 'idempotency-key': key },
      json: { ...body, payment_method_id: 'pm_card_visa' },
    });
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(((await replay.json()) as { tenant_id: string }).tenant_id).toBe(tenant.tenant_id);
  });
});
