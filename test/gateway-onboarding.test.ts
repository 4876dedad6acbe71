import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomUUID } from 'node:crypto';
import { problemOf, startGateway, type GatewayHarness } from './support/gateway.js';

let gw: GatewayHarness;
beforeAll(async () => {
  gw = await startGateway();
});
afterAll(() => gw.stop());

const body = (overrides: Record<string, unknown> = {}) => ({
  email: 'agent@example.com',
  tenant_name: 'Pixel Forge',
  plan: 'developer',
  payment_method_id: 'pm_card_visa',
  ...overrides,
});

function onboard(json: unknown, headers: Record<string, string> = { 'idempotency-key': randomUUID() }) {
  return gw.request('/v1/onboard', { method: 'POST', headers, json });
}

describe('POST /v1/onboard', () => {
  it('creates a tenant with an admin key that works, shown once', async () => {
    const res = await onboard(body());
    expect(res.status).toBe(201);
    const result = (await res.json()) as Record<string, unknown>;
    expect(result).toMatchObject({
      tenant_id: expect.stringMatching(/^t_[0-9A-Z]{26}$/),
      api_key: expect.stringMatching(/^cairn_sk_key_[0-9A-Z]{26}_/),
      recipe_defaults: [
        'image-genai-v1',
        'image-capture-v1',
        'audio-genai-v1',
        'video-genai-v1',
        'video-capture-v1',
        'text-genai-v1',
      ],
      rate_limits: { rps: 20, daily: 100000 },
      next_steps_url: expect.stringMatching(/^https?:\/\/.+/),
    });
    const recipes = await gw.request('/v1/recipes', { key: String(result.api_key) });
    expect(recipes.status).toBe(200);
    const keys = await gw.request(`/v1/tenants/${String(result.tenant_id)}/keys`, { key: String(result.api_key) });
    const listed = (await keys.json()) as { data: Array<Record<string, unknown>> };
    expect(listed.data).toHaveLength(1);
    expect(listed.data[0]).toMatchObject({ scope: 'admin', status: 'active' });
    expect(JSON.stringify(listed)).not.toContain(String(result.api_key));
  });

  it('free plan onboards without a payment method and gets only the image recipes', async () => {
    const res = await onboard(body({ plan: 'free', payment_method_id: undefined }));
    expect(res.status).toBe(201);
    expect(await res.json()).toMatchObject({
      recipe_defaults: ['image-genai-v1', 'image-capture-v1'],
      rate_limits: { rps: 5, daily: 5000 },
    });
  });

  it('replays the same answer for the same Idempotency-Key and never creates a second tenant', async () => {
    const key = randomUUID();
    const first = await onboard(body(), { 'idempotency-key': key });
    const second = await onboard(body(), { 'idempotency-key': key });
    expect(first.status).toBe(201);
    expect(second.status).toBe(201);
    expect(second.headers.get('idempotent-replayed')).toBe('true');
    expect(await second.json()).toEqual(await first.json());
  });

  it('makes exactly one tenant from 20 concurrent requests with one Idempotency-Key (duplicates meanwhile: 409 in_progress)', async () => {
    const key = randomUUID();
    const responses = await Promise.all(
      Array.from({ length: 20 }, () => onboard(body({ tenant_name: 'Race Co' }), { 'idempotency-key': key })),
    );
    const results = await Promise.all(
      responses.map(async (r) => ({
        status: r.status,
        body: (await r.json()) as { tenant_id?: string; code?: string },
      })),
    );
    // One claims the key and onboards; a duplicate meanwhile is told to retry (409 in_progress), never given a second tenant.
    for (const r of results)
      expect(r.status === 201 || (r.status === 409 && r.body.code === 'cairn.idempotency.in_progress')).toBe(true);
    const created = new Set(results.filter((r) => r.status === 201).map((r) => r.body.tenant_id));
    expect(created.size).toBe(1);
    // A retry after it finished replays the same tenant.
    const retry = await onboard(body({ tenant_name: 'Race Co' }), { 'idempotency-key': key });
    expect(retry.status).toBe(201);
    expect(((await retry.json()) as { tenant_id: string }).tenant_id).toBe([...created][0]);
  });

  it('refuses the same Idempotency-Key with a different body (409)', async () => {
    const key = randomUUID();
    expect((await onboard(body(), { 'idempotency-key': key })).status).toBe(201);
    const res = await onboard(body({ tenant_name: 'Someone Else' }), { 'idempotency-key': key });
    expect(res.status).toBe(409);
    expect((await problemOf(res)).code).toBe('cairn.onboard.idempotency_conflict');
  });

  it('requires an Idempotency-Key', async () => {
    const res = await onboard(body(), {});
    expect(res.status).toBe(400);
    expect((await problemOf(res)).code).toBe('cairn.onboard.missing_idempotency_key');
  });

  it.each([
    [
      'Chrome',
      {
        'user-agent':
          'Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36',
      },
    ],
    ['Firefox', { 'user-agent': 'Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0' }],
    ['fetch metadata', { 'user-agent': 'agent/1.0', 'sec-fetch-site': 'cross-site', 'sec-fetch-dest': 'empty' }],
    ['an Origin header', { 'user-agent': 'agent/1.0', origin: 'https://evil.example' }],
  ])('refuses a browser-like client (%s) with 403', async (_name, headers) => {
    const res = await onboard(body(), { 'idempotency-key': randomUUID(), ...headers });
    expect(res.status).toBe(403);
    expect((await problemOf(res)).code).toBe('cairn.onboard.browser_not_allowed');
  });

  it('declines pm_card_chargeDeclined with 402 and creates nothing', async () => {
    const key = randomUUID();
    const res = await onboard(body({ payment_method_id: 'pm_card_chargeDeclined' }), { 'idempotency-key': key });
    expect(res.status).toBe(402);
    expect((await problemOf(res)).code).toBe('cairn.onboard.payment_declined');
    // The key is free again: a retry with a good card succeeds.
    expect((await onboard(body(), { 'idempotency-key': key })).status).toBe(201);
  });

  it('refuses a malformed payment method token with 400', async () => {
    const res = await onboard(body({ payment_method_id: 'visa 4242' }));
    expect(res.status).toBe(400);
    expect((await problemOf(res)).code).toBe('cairn.onboard.invalid_payment_method');
  });

  it('requires a payment method on paid plans', async () => {
    const res = await onboard(body({ plan: 'growth', payment_method_id: undefined }));
    expect((await problemOf(res)).code).toBe('cairn.onboard.invalid_payment_method');
  });

  it('does not sell enterprise through self-onboarding', async () => {
    const res = await onboard(body({ plan: 'enterprise' }));
    expect(res.status).toBe(400);
    expect((await problemOf(res)).code).toBe('cairn.onboard.plan_not_available');
  });

  it('lists every invalid field', async () => {
    const res = await onboard({ email: 'not-an-email', tenant_name: '', plan: 'developer' });
    const problem = (await problemOf(res)) as unknown as { code: string; errors: Array<{ path: string }> };
    expect(problem.code).toBe('cairn.validation.invalid_body');
    expect(problem.errors.map((e) => e.path).sort()).toEqual(['email', 'tenant_name']);
  });
});

describe('POST /v1/onboard per-address limit', () => {
  it('answers 429 with Retry-After and RateLimit headers past the limit', async () => {
    const limited = await startGateway({ ONBOARD_RATE_LIMIT_PER_MINUTE: '2' });
    try {
      const statuses: Response[] = [];
      for (let i = 0; i < 3; i++) {
        statuses.push(
          await limited.request('/v1/onboard', {
            method: 'POST',
            headers: { 'idempotency-key': randomUUID() },
            json: body({ plan: 'free', payment_method_id: undefined }),
          }),
        );
      }
      expect(statuses.map((r) => r.status)).toEqual([201, 201, 429]);
      const refused = statuses[2]!;
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(refused.headers.get('ratelimit-limit')).toBe('2');
      expect(refused.headers.get('ratelimit-remaining')).toBe('0');
      expect((await problemOf(refused)).code).toBe('cairn.ratelimit.exceeded');
    } finally {
      await limited.stop();
    }
  });
});
