import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort, startPrivateNats, startPrivateRedis, waitFor, type PrivateServer } from '@cairn/testing';
import { onboard, startStack, type Stack, postSign } from './support/stack.js';

// Redis and NATS of this file's own (private servers on free ports), so stopping them touches no other test.
// docs/decisions/0017-degraded-dependencies.md: Redis down is a degraded gateway (limits kept in process), never a 500;
// NATS down is a degraded fleet whose signs still answer, their events delivered once NATS is back; neither takes a pod
// out of service (/readyz stays 200 "degraded"), while Postgres down or draining does (503).

let stack: Stack;
let redisPort: number;
let natsPort: number;
let natsDir: string;
let redis: PrivateServer | undefined;
let nats: PrivateServer | undefined;
let tenant: { tenant_id: string; api_key: string };

type Readiness = { status: string; checks: Record<string, string> };
async function readyz(name: 'gateway' | 'signer'): Promise<{ status: number; body: Readiness }> {
  const res = await fetch(`http://127.0.0.1:${stack.services.get(name)!.opsPort}/readyz`);
  return { status: res.status, body: (await res.json()) as Readiness };
}

beforeAll(async () => {
  redisPort = await freePort();
  natsPort = await freePort();
  natsDir = await mkdtemp(join(tmpdir(), 'cairn-degraded-nats-'));
  redis = await startPrivateRedis(redisPort);
  nats = await startPrivateNats(natsPort, natsDir);
  stack = await startStack(['gateway', 'signer', 'audit'], {
    REDIS_URL: `redis://127.0.0.1:${redisPort}`,
    NATS_URL: `nats://127.0.0.1:${natsPort}`,
    ONBOARD_RATE_LIMIT_PER_MINUTE: '3',
  });
  // Onboarded while everything is up: the Redis test below spends this address's onboarding limit.
  tenant = await onboard(stack, 'developer');
}, 120_000);

afterAll(async () => {
  await stack?.stop();
  await redis?.kill();
  await nats?.kill();
  await rm(natsDir, { recursive: true, force: true });
});

describe('Redis down', () => {
  it('rate-limited routes answer (limits kept in process, 429 past them), never 500; readiness says degraded, then ready when Redis is back', async () => {
    expect((await readyz('gateway')).body.status).toBe('ready');
    await redis!.kill();

    // A tenant-limited route still answers.
    const recipes = await stack.request('/v1/recipes', { key: tenant.api_key });
    expect(recipes.status).toBe(200);
    expect(recipes.headers.get('ratelimit-limit')).not.toBeNull();

    // The per-address onboarding limit (3 a minute here) still holds, from a fresh in-process bucket: three
    // requests pass the limiter (refused by validation: 400), the fourth is 429 with Retry-After.
    const statuses: number[] = [];
    let refused: Response | undefined;
    for (let i = 0; i < 4; i += 1) {
      const res = await stack.request('/v1/onboard', {
        method: 'POST',
        headers: { 'idempotency-key': crypto.randomUUID() },
        json: {},
      });
      statuses.push(res.status);
      if (res.status === 429) refused = res;
      else await res.text();
    }
    expect(statuses).toEqual([400, 400, 400, 429]);
    expect(Number(refused!.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
    expect(((await refused!.json()) as { code: string }).code).toBe('cairn.ratelimit.exceeded');

    const degraded = await readyz('gateway');
    expect(degraded.status).toBe(200);
    expect(degraded.body.status).toBe('degraded');
    expect(degraded.body.checks.postgres).toBe('ok');
    expect(degraded.body.checks.redis).not.toBe('ok');

    redis = await startPrivateRedis(redisPort);
    await waitFor(
      'the gateway ready again with Redis back',
      async () => (await readyz('gateway')).body.status === 'ready',
      30_000,
      200,
    );
    expect((await stack.request('/v1/recipes', { key: tenant.api_key })).status).toBe(200);
  }, 90_000);
});

describe('NATS down', () => {
  it('a sign still answers 200; its asset.signed event is delivered (an audit entry) once NATS is back; readiness says degraded meanwhile', async () => {
    await nats!.kill();

    const res = await postSign(stack, tenant.api_key, {
      recipe: 'text-genai-v1',
      metadata: { generator: 'Cairn Text Studio', model: 'lm-1' },
      bytes: Buffer.from('A passage written while the bus was away.\n', 'utf8'),
      name: 'gen.txt',
      type: 'text/plain',
    });
    expect(res.status).toBe(200);
    const { asset_id } = (await res.json()) as { asset_id: string };

    for (const name of ['signer', 'gateway'] as const) {
      const ready = await readyz(name);
      expect(ready.status).toBe(200);
      expect(ready.body.status).toBe('degraded');
      expect(ready.body.checks.nats).not.toBe('ok');
    }

    nats = await startPrivateNats(natsPort, natsDir);
    const entry = await waitFor(
      'the asset.signed audit entry after NATS is back',
      async () => {
        const audit = await stack.request('/v1/audit?event_type=asset.signed', { key: tenant.api_key });
        const { entries } = (await audit.json()) as {
          entries: Array<{ event_type: string; data: { asset_id?: string } }>;
        };
        return entries.find((e) => e.data.asset_id === asset_id);
      },
      60_000,
      250,
    );
    expect(entry.event_type).toBe('asset.signed');
    await waitFor(
      'the signer ready again with NATS back',
      async () => (await readyz('signer')).body.status === 'ready',
      30_000,
      200,
    );
  }, 120_000);
});
