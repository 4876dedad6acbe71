import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { readFile } from 'node:fs/promises';
import sharp from 'sharp';
import { auditV1, billingV1 } from '@cairn/proto';
import { createClient } from '@cairn/rpc';
import { waitFor } from '@cairn/testing';
import { multipart, onboard, startStack, type Stack } from './support/stack.js';
import { settledUsage, type UsageBody } from './support/usage.js';
import { SHARED_DIR } from '../packages/testing/src/shared.js';

const billingClient = (address: string) => createClient(billingV1.BillingService, address);
const auditClient = (address: string) => createClient(auditV1.AuditService, address);

let stack: Stack;
let billing: ReturnType<typeof billingClient>;
let audit: ReturnType<typeof auditClient>;
let photo: Buffer;

beforeAll(async () => {
  stack = await startStack(['watermark', 'signer', 'verifier', 'billing', 'audit', 'gateway'], {
    PUBLIC_VERIFY_PER_MINUTE: '1000',
  });
  billing = billingClient(String(stack.env.BILLING_GRPC_ADDR));
  audit = auditClient(String(stack.env.AUDIT_GRPC_ADDR));
  photo = await sharp(await readFile(`${SHARED_DIR}/fixtures/photos/chelsea.png`))
    .resize(256, 256)
    .jpeg({ quality: 85 })
    .toBuffer();
});

afterAll(async () => {
  billing.close();
  audit.close();
  await stack.stop();
});

function sign(key: string, idempotencyKey: string = crypto.randomUUID()) {
  return stack.request('/v1/sign', {
    method: 'POST',
    key,
    headers: { 'idempotency-key': idempotencyKey },
    body: multipart({ recipe: 'image-genai-v1' }, { field: 'asset', bytes: photo, name: 'a.jpg', type: 'image/jpeg' }),
  });
}

const usage = (key: string): Promise<UsageBody> => settledUsage(stack, key);

describe('metering through the API', () => {
  it('meters a sign once, never its replay, and answers 402 at the quota', async () => {
    const tenant = await onboard(stack, 'developer');
    const before = await usage(tenant.api_key);
    expect(before.meters.image_sign).toEqual({ used: 0, limit: 1000 });
    expect(before.meters.audio_sign).toEqual({ used: 0, limit: 500 });

    await billing.setQuota({ tenantId: tenant.tenant_id, meter: 'image_sign', quota: 2n });
    const idem = crypto.randomUUID();
    expect((await sign(tenant.api_key, idem)).status).toBe(200);
    const replay = await sign(tenant.api_key, idem);
    expect(replay.status).toBe(200);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect((await usage(tenant.api_key)).meters.image_sign).toEqual({ used: 1, limit: 2 });

    expect((await sign(tenant.api_key)).status).toBe(200);
    const refused = await sign(tenant.api_key);
    expect(refused.status).toBe(402);
    expect(refused.headers.get('content-type')).toContain('application/problem+json');
    expect(((await refused.json()) as { type: string }).type).toMatch(/#cairn\.billing\.quota_exceeded$/);
    // The replay of a signed request still answers (it is not metered, so not refused either).
    expect((await sign(tenant.api_key, idem)).status).toBe(200);
    expect((await usage(tenant.api_key)).meters.image_sign).toEqual({ used: 2, limit: 2 });
  });

  it('answers 402 spending_cap_reached on growth once the overage would pass the cap', async () => {
    const tenant = await onboard(stack, 'growth');
    const patch = await stack.request(`/v1/tenants/${tenant.tenant_id}/settings`, {
      method: 'PATCH',
      key: tenant.api_key,
      json: { spending_cap_usd: 0.01 },
    });
    expect(patch.status).toBe(200);
    await billing.setQuota({ tenantId: tenant.tenant_id, meter: 'image_sign', quota: 0n });
    expect((await sign(tenant.api_key)).status).toBe(200); // $0.01 of overage: at the cap, allowed
    const refused = await sign(tenant.api_key);
    expect(refused.status).toBe(402);
    expect(((await refused.json()) as { type: string }).type).toMatch(/#cairn\.billing\.spending_cap_reached$/);
    const u = await usage(tenant.api_key);
    expect(u.spend_usd).toBe(0.01);
    expect(u.meters.image_sign).toMatchObject({ used: 1, overage: 1 });
  });

  it('meters authenticated verifies by modality, never public ones', async () => {
    const tenant = await onboard(stack, 'free');
    const verify = (key?: string) =>
      stack.request('/v1/verify', {
        method: 'POST',
        ...(key ? { key } : {}),
        body: multipart({}, { field: 'file', bytes: photo, name: 'a.jpg', type: 'image/jpeg' }),
      });
    expect((await verify(tenant.api_key)).status).toBe(200);
    expect((await verify()).status).toBe(200);
    expect((await usage(tenant.api_key)).meters.image_verify).toEqual({ used: 1, limit: 100 });
    await billing.setQuota({ tenantId: tenant.tenant_id, meter: 'image_verify', quota: 1n });
    const refused = await verify(tenant.api_key);
    expect(refused.status).toBe(402);
    expect((await verify()).status).toBe(200);
  });
});

describe('audit log through the API', () => {
  it('filters, paginates, streams ndjson, verifies the chain and catches an edited entry', async () => {
    const tenant = await onboard(stack, 'developer');
    for (const description of ['one', 'two', 'three']) {
      const res = await stack.request(`/v1/tenants/${tenant.tenant_id}/keys`, {
        method: 'POST',
        key: tenant.api_key,
        json: { scope: 'read', description },
      });
      expect(res.status).toBe(201);
    }
    expect((await sign(tenant.api_key)).status).toBe(200);
    // tenant.created + key.created (onboarding) + 3 × (key.created + its admin.changed) + asset.signed
    await waitFor('audit entries', async () =>
      (await audit.listEntries({ tenantId: tenant.tenant_id, limit: 100 })).entries.length >= 9 ? true : undefined,
    );

    const signed = (await (
      await stack.request('/v1/audit?event_type=asset.signed', { key: tenant.api_key })
    ).json()) as { entries: Array<{ event_type: string; data: Record<string, unknown> }> };
    expect(signed.entries).toHaveLength(1);
    expect(signed.entries[0]!.data['billing.meter']).toBe('image_sign');

    const page1 = (await (await stack.request('/v1/audit?limit=4', { key: tenant.api_key })).json()) as {
      entries: Array<{ seq: number; entry_id: string }>;
      next_cursor: string | null;
    };
    expect(page1.entries.map((e) => e.seq)).toEqual([9, 8, 7, 6]);
    expect(page1.next_cursor).toBeTruthy();
    const page2 = (await (
      await stack.request(`/v1/audit?limit=4&cursor=${page1.next_cursor}`, { key: tenant.api_key })
    ).json()) as { entries: Array<{ seq: number }>; next_cursor: string | null };
    expect(page2.entries.map((e) => e.seq)).toEqual([5, 4, 3, 2]);
    const page3 = (await (
      await stack.request(`/v1/audit?limit=4&cursor=${page2.next_cursor}`, { key: tenant.api_key })
    ).json()) as { entries: Array<{ seq: number }>; next_cursor: string | null };
    expect(page3.entries.map((e) => e.seq)).toEqual([1]);
    expect(page3.next_cursor).toBeNull();

    const future = (await (
      await stack.request(`/v1/audit?since=${encodeURIComponent(new Date(Date.now() + 3_600_000).toISOString())}`, {
        key: tenant.api_key,
      })
    ).json()) as { entries: unknown[] };
    expect(future.entries).toHaveLength(0);
    expect((await stack.request('/v1/audit?since=yesterday', { key: tenant.api_key })).status).toBe(400);
    expect((await stack.request('/v1/audit?limit=1001', { key: tenant.api_key })).status).toBe(400);

    const ndjson = await stack.request('/v1/audit?format=ndjson&event_type=key.created', { key: tenant.api_key });
    expect(ndjson.status).toBe(200);
    expect(ndjson.headers.get('content-type')).toContain('application/x-ndjson');
    const lines = (await ndjson.text())
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { event_type: string });
    expect(lines).toHaveLength(4);
    expect(lines.every((l) => l.event_type === 'key.created')).toBe(true);

    const intact = (await (await stack.request('/v1/audit/verify', { key: tenant.api_key })).json()) as {
      intact: boolean;
      entries_checked: number;
    };
    expect(intact).toMatchObject({ intact: true, entries_checked: 9 });

    // Tamper with entry 3 as someone with database access would (superuser bypasses RLS).
    const admin = await stack.sandbox.adminClient();
    try {
      await admin.query(
        `update audit.entries set data = jsonb_set(data, '{scope}', '"admin"') where tenant_id = $1 and seq = 3`,
        [tenant.tenant_id],
      );
      const broken = (await (await stack.request('/v1/audit/verify', { key: tenant.api_key })).json()) as {
        intact: boolean;
        first_broken: { seq: number; reason: string };
      };
      expect(broken.intact).toBe(false);
      expect(broken.first_broken.seq).toBe(3);
      expect(broken.first_broken.reason).toMatch(/modified/);
    } finally {
      await admin.end();
    }
  });

  it('a sub-tenant sees only its own log', async () => {
    const parent = await onboard(stack, 'growth'); // sub-tenants need growth or enterprise
    const subRes = await stack.request('/v1/tenants', {
      method: 'POST',
      key: parent.api_key,
      json: { name: 'Sub', plan: 'developer' },
    });
    expect(subRes.status).toBe(201);
    const sub = (await subRes.json()) as { tenant_id: string };
    const keyRes = await stack.request(`/v1/tenants/${sub.tenant_id}/keys`, {
      method: 'POST',
      key: parent.api_key,
      json: { scope: 'read' },
    });
    const subKey = ((await keyRes.json()) as { api_key: string }).api_key;
    await waitFor('sub-tenant entries', async () =>
      (await audit.listEntries({ tenantId: sub.tenant_id, limit: 10 })).entries.length >= 2 ? true : undefined,
    );
    const own = (await (await stack.request('/v1/audit', { key: subKey })).json()) as {
      entries: Array<{ entry_id: string }>;
    };
    expect(own.entries.length).toBeGreaterThanOrEqual(2);
    const parentIds = new Set(
      (await audit.listEntries({ tenantId: parent.tenant_id, limit: 100 })).entries.map((e) => e.entryId),
    );
    expect(own.entries.some((e) => parentIds.has(e.entry_id))).toBe(false);
    expect(
      (await (await stack.request('/v1/audit/verify', { key: subKey })).json()) as { intact: boolean },
    ).toMatchObject({ intact: true });
  });
});
