import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { type Bus } from '@cairn/bus';
import { connectBus } from './support/events.js';
import { newId } from '@cairn/ids';
import { verifyWebhookSignature } from '../packages/sdk/src/index.js';
import { startReceiver, verifySignature, waitFor, type Receiver } from '../services/webhook/test/support/receiver.js';
import { onboard, startStack, type Stack } from './support/stack.js';
import { sampleEvent } from '@cairn/testing';

let stack: Stack;
let bus: Bus;
let a: { tenant_id: string; api_key: string };
let b: { tenant_id: string; api_key: string };
let receiver: Receiver;
/** Short, so a receiver that does not answer costs the tests a second, not the default 30. */
const TIMEOUT_MS = 3000;

beforeAll(async () => {
  stack = await startStack(['audit', 'webhook', 'gateway'], {
    WEBHOOK_RETRY_SCALE: '0.001',
    WEBHOOK_POLL_INTERVAL_MS: '50',
    KEY_EXPIRY_SWEEP_INTERVAL_MS: '200',
    WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS),
  });
  a = await onboard(stack);
  b = await onboard(stack);
  receiver = await startReceiver();
  bus = await connectBus(stack.env);
}, 120_000);

afterAll(async () => {
  await bus?.close();
  await receiver?.close();
  await stack?.stop();
});

type Json = Record<string, unknown>;
const json = async (res: Response) => (await res.json()) as Json;

describe('/v1/webhooks', () => {
  let webhookId: string | undefined;
  let secret: string;
  const create = () =>
    stack.request('/v1/webhooks', {
      method: 'POST',
      key: a.api_key,
      json: { url: receiver.url, events: ['job.completed', 'key.expiring'], description: 'ci' },
    });
  /** The endpoint the first test creates, or created here when a test runs without it (`-t`): no test needs another to run first. */
  async function endpoint(): Promise<string> {
    if (webhookId === undefined) {
      const body = await json(await create());
      webhookId = String(body.webhook_id);
      secret = String(body.secret);
    }
    return webhookId;
  }

  it('creates an endpoint and shows its secret once', async () => {
    const res = await create();
    expect(res.status).toBe(201);
    const body = await json(res);
    expect(body).toMatchObject({
      url: receiver.url,
      events: ['job.completed', 'key.expiring'],
      description: 'ci',
      payload_format: 'a',
    });
    expect(body.webhook_id).toMatch(/^wh_/);
    expect(body.secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    expect(res.headers.get('location')).toBe(`/v1/webhooks/${String(body.webhook_id)}`);
    webhookId = String(body.webhook_id);
    secret = String(body.secret);

    const got = await json(await stack.request(`/v1/webhooks/${webhookId}`, { key: a.api_key }));
    expect(got.webhook_id).toBe(webhookId);
    expect(got).not.toHaveProperty('secret');
    const list = await json(await stack.request('/v1/webhooks', { key: a.api_key }));
    expect((list.data as Json[]).map((w) => w.webhook_id)).toEqual([webhookId]);
    expect(JSON.stringify(list)).not.toContain('whsec_');
  });

  it('refuses unknown events (naming the allowed ones), bad URLs and bad bodies', async () => {
    const bad = await stack.request('/v1/webhooks', {
      method: 'POST',
      key: a.api_key,
      json: { url: receiver.url, events: ['asset.signed'] },
    });
    expect(bad.status).toBe(400);
    expect(bad.headers.get('content-type')).toMatch(/application\/problem\+json/);
    const problem = await json(bad);
    expect(problem.type).toMatch(/#cairn\.webhook\.unknown_event$/);
    for (const name of ['job.completed', 'manifest.signed', 'certificate.expiring', 'billing.quota_exceeded'])
      expect(String(problem.detail)).toContain(name);

    const url = await stack.request('/v1/webhooks', {
      method: 'POST',
      key: a.api_key,
      json: { url: 'ftp://example.com/x', events: ['job.completed'] },
    });
    expect(url.status).toBe(400);
    expect((await json(url)).type).toMatch(/#cairn\.webhook\.invalid_url$/);
    const shape = await stack.request('/v1/webhooks', {
      method: 'POST',
      key: a.api_key,
      json: { url: receiver.url, events: [] },
    });
    expect(shape.status).toBe(400);
    const format = await stack.request('/v1/webhooks', {
      method: 'POST',
      key: a.api_key,
      json: { url: receiver.url, events: ['job.completed'], payload_format: 'c' },
    });
    expect(format.status).toBe(400);
  });

  it('needs an admin key to change endpoints', async () => {
    const keyRes = await stack.request(`/v1/tenants/${a.tenant_id}/keys`, {
      method: 'POST',
      key: a.api_key,
      json: { scope: 'read' },
    });
    expect(keyRes.status).toBe(201);
    const readKey = String((await json(keyRes)).api_key);
    expect(
      (
        await stack.request('/v1/webhooks', {
          method: 'POST',
          key: readKey,
          json: { url: receiver.url, events: ['job.completed'] },
        })
      ).status,
    ).toBe(403);
    expect((await stack.request('/v1/webhooks', { key: readKey })).status).toBe(200);
    expect((await stack.request('/v1/webhooks')).status).toBe(401);
  });

  it("hides one tenant's endpoints from another (404)", async () => {
    await endpoint();
    for (const [method, path] of [
      ['GET', `/v1/webhooks/${webhookId}`],
      ['DELETE', `/v1/webhooks/${webhookId}`],
      ['POST', `/v1/webhooks/${webhookId}/rotate-secret`],
      ['GET', `/v1/webhooks/${webhookId}/deliveries`],
      ['POST', `/v1/webhooks/${webhookId}/deliveries/dlv_01JZZZZZZZZZZZZZZZZZZZZZZZ/redeliver`],
    ] as const) {
      const res = await stack.request(path, { method, key: b.api_key });
      expect([method, path, res.status]).toEqual([method, path, 404]);
    }
    expect(((await json(await stack.request('/v1/webhooks', { key: b.api_key }))).data as Json[]).length).toBe(0);
    expect((await stack.request('/v1/webhooks/wh_nope', { key: a.api_key })).status).toBe(404);
  });

  it('delivers, lists deliveries with attempts, rotates the secret and redelivers', async () => {
    await endpoint();
    const event = sampleEvent('job.completed', a.tenant_id, { job_id: newId('job') });
    await bus.publish(event);
    await bus.publish(sampleEvent('job.completed', b.tenant_id, { job_id: newId('job') })); // another tenant: not ours
    const first = await waitFor('delivery', () =>
      receiver.received.find((r) => r.headers['cairn-event-id'] === event.event_id),
    );
    expect(verifySignature(first.body, first.headers['cairn-signature'], secret)).toBe(true);

    const list = await waitFor('delivered', async () => {
      const l = (await json(await stack.request(`/v1/webhooks/${webhookId}/deliveries?limit=10`, { key: a.api_key })))
        .data as Json[];
      return l[0]?.status === 'delivered' ? l : undefined;
    });
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({
      event_id: event.event_id,
      event_type: 'job.completed',
      attempts: 1,
      last_status_code: 200,
      next_attempt_at: null,
    });
    expect((list[0]!.attempt_log as Json[])[0]).toMatchObject({ n: 1, status_code: 200 });
    expect(typeof (list[0]!.attempt_log as Json[])[0]!.latency_ms).toBe('number');
    expect((await stack.request(`/v1/webhooks/${webhookId}/deliveries?limit=0`, { key: a.api_key })).status).toBe(400);

    const rotated = await stack.request(`/v1/webhooks/${webhookId}/rotate-secret`, {
      method: 'POST',
      key: a.api_key,
      json: { overlap_seconds: 86_400 },
    });
    expect(rotated.status).toBe(200);
    const rotatedBody = await json(rotated);
    const newSecret = String(rotatedBody.secret);
    expect(newSecret).toMatch(/^whsec_/);
    expect(newSecret).not.toBe(secret);
    // A day's overlap, asked for: the replaced secret still signs, so a receiver not yet switched keeps working.
    expect(Date.parse(String(rotatedBody.previous_secret_expires_at)) - Date.now()).toBeGreaterThan(23 * 3600_000);

    // Once the last attempt is recorded: a delivery still being delivered is not started again.
    const redeliver = async () => {
      await waitFor('the last attempt recorded', async () => {
        const l = (await json(await stack.request(`/v1/webhooks/${webhookId}/deliveries?limit=10`, { key: a.api_key })))
          .data as Json[];
        return l[0]?.status === 'delivered';
      });
      return stack.request(`/v1/webhooks/${webhookId}/deliveries/${String(list[0]!.delivery_id)}/redeliver`, {
        method: 'POST',
        key: a.api_key,
      });
    };
    const nth = (n: number) =>
      waitFor(
        `delivery ${n}`,
        () => receiver.received.filter((r) => r.headers['cairn-event-id'] === event.event_id)[n],
      );
    expect((await redeliver()).status).toBe(202);
    const second = await nth(1);
    // Both signatures, the new secret's first; either receiver accepts the delivery, a wrong secret does not.
    const both = String(second.headers['x-cairn-signature']).split(',');
    expect(both).toHaveLength(2);
    expect(verifySignature(second.body, both[0], newSecret)).toBe(true);
    expect(verifySignature(second.body, both[1], secret)).toBe(true);
    for (const key of [secret, newSecret])
      expect(await verifyWebhookSignature(second.body, second.headers, key)).toBe(true);
    expect(await verifyWebhookSignature(second.body, second.headers, 'whsec_wrong')).toBe(false);

    // By default (and for a secret that leaked) no overlap: only the newest signs, the one value the spec writes.
    const refused = await stack.request(`/v1/webhooks/${webhookId}/rotate-secret`, {
      method: 'POST',
      key: a.api_key,
      json: { overlap_seconds: -1 },
    });
    expect(refused.status).toBe(400);
    const immediate = await stack.request(`/v1/webhooks/${webhookId}/rotate-secret`, {
      method: 'POST',
      key: a.api_key,
    });
    expect(immediate.status).toBe(200);
    const immediateBody = await json(immediate);
    expect(immediateBody.previous_secret_expires_at).toBeUndefined();
    const newest = String(immediateBody.secret);
    expect((await redeliver()).status).toBe(202);
    const third = await nth(2);
    expect(verifySignature(third.body, third.headers['cairn-signature'], newest)).toBe(true);
    for (const key of [secret, newSecret])
      expect(await verifyWebhookSignature(third.body, third.headers, key)).toBe(false);
  });

  it('emits key.expiring once for a key that expires within 7 days', async () => {
    await endpoint();
    const expiresAt = new Date(Date.now() + 3 * 86_400_000).toISOString();
    const created = await json(
      await stack.request(`/v1/tenants/${a.tenant_id}/keys`, {
        method: 'POST',
        key: a.api_key,
        json: { scope: 'sign', expires_at: expiresAt },
      }),
    );
    const later = await json(
      await stack.request(`/v1/tenants/${a.tenant_id}/keys`, {
        method: 'POST',
        key: a.api_key,
        json: { scope: 'sign', expires_at: new Date(Date.now() + 30 * 86_400_000).toISOString() },
      }),
    );
    const got = await waitFor('key.expiring', () =>
      receiver.received.find((r) => (JSON.parse(r.body) as Json).type === 'key.expiring'),
    );
    expect((JSON.parse(got.body) as { data: Json }).data).toMatchObject({
      key_id: created.key_id,
      expires_at: expiresAt,
    });
    // Several more sweeps: still one notice, and none for the key that expires in 30 days.
    await new Promise((resolve) => setTimeout(resolve, 800));
    const notices = receiver.received
      .filter((r) => (JSON.parse(r.body) as Json).type === 'key.expiring')
      .map((r) => (JSON.parse(r.body) as { data: Json }).data.key_id);
    expect(notices).toEqual([created.key_id]);
    expect(notices).not.toContain(later.key_id);
  });

  it('deletes an endpoint', async () => {
    await endpoint();
    expect((await stack.request(`/v1/webhooks/${webhookId}`, { method: 'DELETE', key: a.api_key })).status).toBe(204);
    expect((await stack.request(`/v1/webhooks/${webhookId}`, { key: a.api_key })).status).toBe(404);
    expect((await stack.request(`/v1/webhooks/${webhookId}`, { method: 'DELETE', key: a.api_key })).status).toBe(404);
  });
});

describe('/v1/webhooks: slow receivers and deleted endpoints', () => {
  /** Creates an endpoint for a fresh tenant of its own, so these tests need nothing from the ones above. */
  async function endpointFor(
    url: string,
  ): Promise<{ tenant: { tenant_id: string; api_key: string }; webhookId: string }> {
    const tenant = await onboard(stack);
    const res = await stack.request('/v1/webhooks', {
      method: 'POST',
      key: tenant.api_key,
      json: { url, events: ['job.completed'] },
    });
    expect(res.status).toBe(201);
    return { tenant, webhookId: String((await json(res)).webhook_id) };
  }

  it(`counts a receiver slower than WEBHOOK_TIMEOUT_MS (no answer within ${TIMEOUT_MS} ms) as a failed attempt, and retries`, async () => {
    const slow = await startReceiver((_request, nth) => (nth === 1 ? 'hang' : 200));
    try {
      const { tenant, webhookId } = await endpointFor(slow.url);
      const event = sampleEvent('job.completed', tenant.tenant_id, { job_id: newId('job') });
      await bus.publish(event);
      const [delivery] = await waitFor('the retry delivered', async () => {
        const l = (await json(await stack.request(`/v1/webhooks/${webhookId}/deliveries`, { key: tenant.api_key })))
          .data as Json[];
        return l[0]?.status === 'delivered' ? l : undefined;
      });
      expect(delivery).toMatchObject({ event_id: event.event_id, attempts: 2, last_status_code: 200 });
      const log = delivery!.attempt_log as Json[];
      expect(log[0]).toMatchObject({ n: 1, status_code: null, error: `no answer within ${TIMEOUT_MS} ms` });
      expect(log[1]).toMatchObject({ n: 2, status_code: 200, error: null });
      expect(slow.received.map((r) => r.headers['cairn-attempt'])).toEqual(['1', '2']);
    } finally {
      await slow.close();
    }
  });

  it("tells the tenant a failed attempt's status, never the body its target answered", async () => {
    // The body an internal service would answer is what a server-side request forgery wants to read back.
    const failing = await startReceiver((_request, nth) => (nth === 1 ? 500 : 200));
    try {
      const { tenant, webhookId } = await endpointFor(failing.url);
      const event = sampleEvent('job.completed', tenant.tenant_id, { job_id: newId('job') });
      await bus.publish(event);
      const answer = await waitFor('the retry delivered', async () => {
        const res = await stack.request(`/v1/webhooks/${webhookId}/deliveries`, { key: tenant.api_key });
        const text = await res.text();
        return (JSON.parse(text) as { data: Json[] }).data[0]?.status === 'delivered' ? text : undefined;
      });
      const [delivery] = (JSON.parse(answer) as { data: Json[] }).data;
      expect((delivery!.attempt_log as Json[])[0]).toMatchObject({ n: 1, status_code: 500, error: 'HTTP 500' });
      expect(answer).not.toContain('nope');
    } finally {
      await failing.close();
    }
  });

  it('refuses, in development too, receivers at private, metadata and embedded-IPv4 addresses', async () => {
    for (const url of [
      'http://169.254.169.254/latest/meta-data',
      'http://10.0.0.5/hook',
      'http://[::a9fe:a9fe]/hook',
      'http://[64:ff9b:1::a9fe:a9fe]/hook',
    ]) {
      const res = await stack.request('/v1/webhooks', {
        method: 'POST',
        key: a.api_key,
        json: { url, events: ['job.completed'] },
      });
      expect([url, res.status, (await json(res)).type]).toEqual([
        url,
        400,
        expect.stringMatching(/#cairn\.webhook\.invalid_url$/),
      ]);
    }
  });

  it('drops the pending deliveries of a deleted endpoint: they are never sent', async () => {
    // Never answers: the first delivery stays in flight and, one in flight per endpoint, the others wait.
    const stuck = await startReceiver(() => 'hang');
    const admin = await stack.sandbox.adminClient();
    try {
      const { tenant, webhookId } = await endpointFor(stuck.url);
      const events = Array.from({ length: 3 }, () =>
        sampleEvent('job.completed', tenant.tenant_id, { job_id: newId('job') }),
      );
      for (const event of events) await bus.publish(event);
      await waitFor('the first delivery in flight', () => stuck.received.length === 1);
      const pending = await waitFor('all three deliveries recorded', async () => {
        const l = (await json(await stack.request(`/v1/webhooks/${webhookId}/deliveries`, { key: tenant.api_key })))
          .data as Json[];
        return l.length === 3 ? l.filter((d) => d.status === 'pending') : undefined;
      });
      expect(pending.length).toBeGreaterThanOrEqual(2);

      expect((await stack.request(`/v1/webhooks/${webhookId}`, { method: 'DELETE', key: tenant.api_key })).status).toBe(
        204,
      );
      // Settled: no delivery of the endpoint is pending or in flight any more, so none can be sent later.
      const statuses = await waitFor(
        'every delivery of the deleted endpoint settled',
        async () => {
          const { rows } = await admin.query<{ status: string }>(
            'select status from webhook.deliveries where webhook_id = $1',
            [webhookId],
          );
          return rows.length === 3 && rows.every((r) => r.status !== 'pending' && r.status !== 'delivering')
            ? rows.map((r) => r.status)
            : undefined;
        },
        TIMEOUT_MS + 20_000,
      );
      expect(statuses).toEqual(['failed', 'failed', 'failed']);
      // Only the request already in flight at deletion ever reached the receiver: no retry of it, none of the others.
      expect(stuck.received.map((r) => r.headers['cairn-event-id'])).toEqual([
        stuck.received[0]!.headers['cairn-event-id'],
      ]);
      expect(events.map((e) => e.event_id)).toContain(stuck.received[0]!.headers['cairn-event-id']);
    } finally {
      await admin.end();
      await stuck.close();
    }
  });
});
