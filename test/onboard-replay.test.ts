import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import pg from 'pg';
import { waitFor } from '@cairn/testing';
import { startStack, type Stack } from './support/stack.js';

// The replay window shortened to 2 s; the sweep that drops sealed answers runs at the gateway's start and then
// hourly, so the first expiry below is refused by the read path alone, and a restart shows the sweep's part.
const REPLAY_TTL_SECONDS = 2;

let stack: Stack;
let admin: pg.Client;

beforeAll(async () => {
  stack = await startStack(['gateway'], {
    ONBOARD_REPLAY_TTL_SECONDS: String(REPLAY_TTL_SECONDS),
    ONBOARD_REPLAY_SWEEP_INTERVAL_MS: '3600000',
    ONBOARD_RATE_LIMIT_PER_MINUTE: '1000',
  });
  admin = await stack.sandbox.adminClient();
});

afterAll(async () => {
  await admin.end();
  await stack.stop();
});

const victimBody = {
  email: 'victim@example.com',
  tenant_name: 'Victim Studio',
  plan: 'developer',
  payment_method_id: 'pm_card_visa',
};

function onboard(idempotencyKey: string, json: unknown = victimBody) {
  return stack.request('/v1/onboard', { method: 'POST', headers: { 'idempotency-key': idempotencyKey }, json });
}

/** The sealed answers still held for these Idempotency-Keys (read as the database owner, past row-level security). */
async function sealedAnswers(keys: string[]): Promise<number> {
  const { rows } = await admin.query<{ n: string }>(
    'select count(*) as n from tenant.onboarding_requests where idempotency_key = any($1) and sealed_response is not null',
    [keys],
  );
  return Number(rows[0]!.n);
}

describe('onboarding replays are bounded by the idempotency window', () => {
  it('hands the admin key to a replay inside the window and never after it', async () => {
    const idem = crypto.randomUUID();
    const first = await onboard(idem);
    expect(first.status).toBe(201);
    const created = (await first.json()) as { tenant_id: string; api_key: string };

    // Inside the window: the lost answer is given again (the point of the idempotent onboarding).
    const replay = await onboard(idem);
    expect(replay.status).toBe(201);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(((await replay.json()) as { api_key: string }).api_key).toBe(created.api_key);

    // An attacker without an account who learned the Idempotency-Key and body (a proxy log, a leaked script)
    // replays them once the window is over: a clear problem, and the key appears nowhere in it.
    const refused = await waitFor('the replay window to end', async () => {
      const res = await onboard(idem);
      return res.status === 201 ? undefined : res;
    });
    expect(refused.status).toBe(409);
    expect(refused.headers.get('content-type')).toContain('application/problem+json');
    expect(refused.headers.get('idempotent-replayed')).toBeNull();
    const text = await refused.text();
    expect(text).not.toContain(created.api_key);
    const problem = JSON.parse(text) as { code: string; detail: string };
    expect(problem.code).toBe('cairn.onboard.idempotency_expired');
    expect(problem.detail).toMatch(/never shown again/);

    // The same key with another body is refused the same way (no second tenant, no key).
    const other = await onboard(idem, { ...victimBody, tenant_name: 'Attacker' });
    expect(other.status).toBe(409);
    expect(await other.text()).not.toContain(created.api_key);

    // The victim's key itself still works: only its replay ended.
    expect((await stack.request('/v1/recipes', { key: created.api_key })).status).toBe(200);
  });

  it('drops every sealed answer past the window from the database, and a late replay still gets no key', async () => {
    const keys = [crypto.randomUUID(), crypto.randomUUID()];
    const apiKeys: string[] = [];
    for (const key of keys) {
      const res = await onboard(key, { ...victimBody, tenant_name: `Victim ${key.slice(0, 8)}` });
      expect(res.status).toBe(201);
      apiKeys.push(((await res.json()) as { api_key: string }).api_key);
    }
    expect(await sealedAnswers(keys)).toBe(2);
    await waitFor('the replay window to end', async () =>
      (await onboard(keys[0]!, { ...victimBody, tenant_name: `Victim ${keys[0]!.slice(0, 8)}` })).status === 409
        ? true
        : undefined,
    );

    // The sweep runs when the tenant service starts: after a restart nothing past the window holds an answer.
    await stack.stopService('tenant');
    await stack.restart('tenant');
    await waitFor('the sweep to drop the sealed answers', async () =>
      (await sealedAnswers(keys)) === 0 ? true : undefined,
    );
    const { rows } = await admin.query<{ n: string }>(
      `select count(*) as n from tenant.onboarding_requests where sealed_response is not null and created_at <= now() - make_interval(secs => $1)`,
      [REPLAY_TTL_SECONDS],
    );
    expect(Number(rows[0]!.n)).toBe(0);

    const late = await onboard(keys[1]!, { ...victimBody, tenant_name: `Victim ${keys[1]!.slice(0, 8)}` });
    expect(late.status).toBe(409);
    const text = await late.text();
    expect((JSON.parse(text) as { code: string }).code).toBe('cairn.onboard.idempotency_expired');
    for (const apiKey of apiKeys) expect(text).not.toContain(apiKey);
  });
});
