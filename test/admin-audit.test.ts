import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash, sign as ecdsaSign, X509Certificate } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { webhookV1 } from '@cairn/proto';
import { createClient } from '@cairn/rpc';
import { makeTestCredential, type TestCredential } from '../services/signer/test/c2pa-fixtures.js';
import { onboardEnterprise, startStack, type Stack } from './support/stack.js';

// docs/decisions/0040-admin-changes-audited.md: every admin change leaves an audit entry. The attacker holds a stolen
// admin key of an Enterprise tenant and redirects what it can: signatures (a BYOK credential), events (a webhook),
// verdicts (the trust list), the audit log itself (the export destination), access (a key minted and revoked) and a
// sub-tenant's limits. Each change must appear in the tenant's tamper-evident log, naming the stolen key, with the
// settings before and after, and no secret the changes issued.

interface AdminEntry {
  event_type: string;
  seq: number;
  data: {
    action: string;
    object_type: string;
    object_id: string;
    actor_key_id: string | null;
    actor_tenant_id?: string;
    before: Record<string, unknown> | null;
    after: Record<string, unknown> | null;
  };
}

let stack: Stack;
let victim: { tenant_id: string; api_key: string; key_id: string };
let credential: TestCredential;
let signer: { url: string; close(): Promise<void> };

/** The attacker's signing endpoint: signs whatever it is asked with the key it holds (a possession proof passes). */
async function signingEndpoint(key: string): Promise<typeof signer> {
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
      const field = body.to_be_signed ?? body.challenge;
      const input = typeof field === 'string' ? field : '';
      const signature = ecdsaSign('sha256', Buffer.from(input, 'base64'), { key, dsaEncoding: 'ieee-p1363' });
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ signature: signature.toString('base64') }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/sign`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The attacker holds the leaf key it registers, so it proves possession as any tenant would (README's bytes). */
function proofOfPossession(tenantId: string, leafCertPem: string, privateKeyPem: string): string {
  const leafSha256 = createHash('sha256').update(new X509Certificate(leafCertPem).raw).digest('hex');
  const message = Buffer.from(`cairn-byok-registration\n${tenantId}\n${leafSha256}`, 'utf8');
  return ecdsaSign('sha256', message, { key: privateKeyPem, dsaEncoding: 'ieee-p1363' }).toString('base64');
}

async function call(
  path: string,
  init: { method?: string; json?: unknown } = {},
): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await stack.request(path, { ...init, key: victim.api_key });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Record<string, unknown>) : {} };
}

async function adminEntries(apiKey: string): Promise<AdminEntry[]> {
  const res = await stack.request('/v1/audit?event_type=admin.changed&limit=1000', { key: apiKey });
  expect(res.status).toBe(200);
  return ((await res.json()) as { entries: AdminEntry[] }).entries;
}

/** The whole log as a client reads it (every entry, every field), for the search for secrets. */
async function wholeLog(apiKey: string): Promise<string> {
  const res = await stack.request('/v1/audit?format=ndjson', { key: apiKey });
  expect(res.status).toBe(200);
  return res.text();
}

/** Waits for `count` admin entries (the bus carries them to the audit service), then answers them oldest first. */
async function settledAdminEntries(apiKey: string, count: number): Promise<AdminEntry[]> {
  for (let i = 0; i < 200; i++) {
    const entries = await adminEntries(apiKey);
    if (entries.length >= count) return entries.sort((a, b) => a.seq - b.seq);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`fewer than ${count} admin.changed entries arrived`);
}

beforeAll(async () => {
  // The export job never runs during the test: the attacker's bucket is never written to.
  stack = await startStack(['watermark', 'signer', 'verifier', 'audit', 'webhook', 'gateway'], {
    AUDIT_EXPORT_INTERVAL_MS: '86400000',
  });
  const tenant = await onboardEnterprise(stack);
  const keys = (await (
    await stack.request(`/v1/tenants/${tenant.tenant_id}/keys`, { key: tenant.api_key })
  ).json()) as {
    data: Array<{ key_id: string }>;
  };
  expect(keys.data).toHaveLength(1);
  victim = { ...tenant, key_id: keys.data[0]!.key_id };
  credential = await makeTestCredential({ commonName: 'Attacker Signer', organization: 'Attacker Org' });
  signer = await signingEndpoint(credential.privateKeyPem);
}, 180_000);

afterAll(async () => {
  await signer?.close();
  await stack?.stop();
});

describe('every admin change made with a stolen admin key is in the audit log', () => {
  const secrets: string[] = [];
  const ids: Record<string, string> = {};

  it('the attacker changes everything an admin key can change', async () => {
    const registered = await call('/v1/signing-credentials', {
      method: 'POST',
      json: {
        certificate_chain_pem: credential.certChainPem,
        endpoint_url: signer.url,
        description: 'hijack',
        proof_of_possession: proofOfPossession(victim.tenant_id, credential.leafCertPem, credential.privateKeyPem),
      },
    });
    expect(registered.status).toBe(201);
    ids.credential = String(registered.body.credential_id);
    secrets.push(String(registered.body.hmac_secret));
    expect((await call(`/v1/signing-credentials/${ids.credential}`, { method: 'DELETE' })).status).toBe(204);

    const hook = await call('/v1/webhooks', {
      method: 'POST',
      json: { url: 'http://127.0.0.1:9/collect', events: ['job.completed'], description: 'exfiltrate' },
    });
    expect(hook.status).toBe(201);
    ids.webhook = String(hook.body.webhook_id);
    secrets.push(String(hook.body.secret));
    const rotated = await call(`/v1/webhooks/${ids.webhook}/rotate-secret`, { method: 'POST' });
    expect(rotated.status).toBe(200);
    secrets.push(String(rotated.body.secret));
    expect((await call(`/v1/webhooks/${ids.webhook}`, { method: 'DELETE' })).status).toBe(204);

    const trusted = await call('/v1/trust-list', {
      method: 'POST',
      json: { entries: [{ issuer_cn: 'Attacker Root', certificate_pem: credential.caCertPem }] },
    });
    expect(trusted.status).toBe(200);
    expect((await call('/v1/trust-list', { method: 'DELETE' })).status).toBe(204);

    const exported = await call('/v1/audit/export', {
      method: 'PUT',
      json: { sink: 's3', bucket: 'attacker-bucket', region: 'us-east-1', prefix: 'loot' },
    });
    expect(exported.status).toBe(200);
    const moved = await call('/v1/audit/export', {
      method: 'PUT',
      json: { sink: 's3', bucket: 'attacker-bucket-2', region: 'us-east-1', prefix: 'loot' },
    });
    expect(moved.status).toBe(200);
    expect((await call('/v1/audit/export', { method: 'DELETE' })).status).toBe(204);

    const minted = await call(`/v1/tenants/${victim.tenant_id}/keys`, {
      method: 'POST',
      json: { scope: 'admin', description: 'backdoor' },
    });
    expect(minted.status).toBe(201);
    ids.key = String(minted.body.key_id);
    secrets.push(String(minted.body.api_key));
    expect((await call(`/v1/tenants/${victim.tenant_id}/keys/${ids.key}`, { method: 'DELETE' })).status).toBe(200);

    const child = await call('/v1/tenants', { method: 'POST', json: { name: 'Shell', plan: 'growth' } });
    expect(child.status).toBe(201);
    ids.child = String(child.body.tenant_id);
    const capped = await call(`/v1/tenants/${ids.child}/settings`, {
      method: 'PATCH',
      json: { spending_cap_usd: 5000, audit_retention_days: 7 },
    });
    expect(capped.status).toBe(200);
    const childKey = await call(`/v1/tenants/${ids.child}/keys`, { method: 'POST', json: { scope: 'read' } });
    expect(childKey.status).toBe(201);
    ids.childKey = String(childKey.body.key_id);
    secrets.push(String(childKey.body.api_key));
    for (const secret of secrets) expect(secret.length).toBeGreaterThan(20);
  });

  it('names each change, its object, the stolen key and the settings before and after', async () => {
    const entries = await settledAdminEntries(victim.api_key, 15);
    // Each service writes its entries through its own outbox: their order in the chain follows delivery, not the calls.
    const actions = entries.map((e) => `${e.data.action} ${e.data.object_id}`).sort();
    expect(actions).toEqual(
      [
        `signing_credential.registered ${ids.credential}`,
        `signing_credential.deleted ${ids.credential}`,
        `webhook.created ${ids.webhook}`,
        `webhook.secret_rotated ${ids.webhook}`,
        `webhook.deleted ${ids.webhook}`,
        `trust_list.set ${victim.tenant_id}`,
        `trust_list.deleted ${victim.tenant_id}`,
        `audit_export.set ${victim.tenant_id}`,
        `audit_export.set ${victim.tenant_id}`,
        `audit_export.deleted ${victim.tenant_id}`,
        `api_key.created ${ids.key}`,
        `api_key.revoked ${ids.key}`,
        `tenant.sub_tenant_created ${ids.child}`,
        `tenant.settings_changed ${ids.child}`,
        `api_key.created ${ids.childKey}`,
      ].sort(),
    );
    for (const entry of entries) expect(entry.data.actor_key_id).toBe(victim.key_id);

    const byAction = (action: string, nth = 0) => entries.filter((e) => e.data.action === action)[nth]!.data;
    expect(byAction('signing_credential.registered')).toMatchObject({
      before: null,
      after: { endpoint_url: signer.url, description: 'hijack', subject: expect.stringContaining('Attacker Org') },
    });
    expect(byAction('signing_credential.deleted')).toMatchObject({ before: { endpoint_url: signer.url }, after: null });
    expect(byAction('webhook.created')).toMatchObject({
      before: null,
      after: { url: 'http://127.0.0.1:9/collect', events: ['job.completed'], description: 'exfiltrate' },
    });
    expect(byAction('webhook.secret_rotated').after).toMatchObject({ secret: 'rotated' });
    expect(byAction('webhook.deleted')).toMatchObject({ before: { url: 'http://127.0.0.1:9/collect' }, after: null });
    expect(byAction('trust_list.set')).toMatchObject({
      before: null,
      after: { count: 1, certificates: [{ issuer_cn: 'Attacker Root', sha256_fingerprint: expect.any(String) }] },
    });
    expect(byAction('trust_list.deleted')).toMatchObject({ before: { count: 1 }, after: null });
    expect(byAction('audit_export.set', 0)).toMatchObject({ before: null, after: { bucket: 'attacker-bucket' } });
    expect(byAction('audit_export.set', 1)).toMatchObject({
      before: { bucket: 'attacker-bucket' },
      after: { bucket: 'attacker-bucket-2', region: 'us-east-1', prefix: 'loot' },
    });
    expect(byAction('audit_export.deleted')).toMatchObject({ before: { bucket: 'attacker-bucket-2' }, after: null });
    expect(entries.find((e) => e.data.object_id === ids.key)!.data).toMatchObject({
      before: null,
      after: { scope: 'admin', description: 'backdoor', tenant_id: victim.tenant_id },
    });
    expect(byAction('api_key.revoked')).toMatchObject({
      before: { revoked_at: null },
      after: { revoked_at: expect.any(String) },
    });
    expect(byAction('tenant.sub_tenant_created')).toMatchObject({
      before: null,
      after: { name: 'Shell', plan: 'growth' },
    });
    expect(byAction('tenant.settings_changed')).toMatchObject({
      after: { spending_cap_usd: 5000, audit_retention_days: 7 },
    });
  });

  it('the sub-tenant changed reads the change, and who made it, in its own log', async () => {
    // A read key of the sub-tenant, minted by the attacker (itself an audited change); its api_key is a secret above.
    const childApiKey = secrets[secrets.length - 1]!;
    const entries = await settledAdminEntries(childApiKey, 2);
    expect(entries.map((e) => e.data.action)).toEqual(
      expect.arrayContaining(['tenant.settings_changed', 'api_key.created']),
    );
    for (const entry of entries) {
      expect(entry.data.actor_key_id).toBe(victim.key_id);
      expect(entry.data.actor_tenant_id).toBe(victim.tenant_id);
    }
  });

  it('no secret issued by these changes is anywhere in the log', async () => {
    const log = await wholeLog(victim.api_key);
    const childLog = await wholeLog(secrets[secrets.length - 1]!);
    expect(log.split('\n').filter(Boolean).length).toBeGreaterThanOrEqual(15);
    for (const secret of secrets) {
      expect(log).not.toContain(secret);
      expect(childLog).not.toContain(secret);
    }
    // Nor the private key of the credential, nor the stolen key itself.
    expect(log).not.toContain(victim.api_key);
    expect(log).not.toContain(credential.privateKeyPem.split('\n')[1]!);
  });

  it('an actor that is not an API key id is refused by the service, and nothing changes', async () => {
    // Whoever reaches a service's gRPC port directly cannot write an entry naming something else as its actor.
    const webhooks = createClient(webhookV1.WebhookService, String(stack.env.WEBHOOK_GRPC_ADDR));
    try {
      const forged = webhooks.createEndpoint({
        tenantId: victim.tenant_id,
        url: 'http://127.0.0.1:9/forged',
        events: ['job.completed'],
        actorKeyId: 'someone-else',
      });
      await expect(forged).rejects.toMatchObject({ code: 'cairn.validation.invalid_body' });
      const listed = await webhooks.listEndpoints({ tenantId: victim.tenant_id, limit: 100 });
      expect(listed.endpoints.map((e) => e.url)).not.toContain('http://127.0.0.1:9/forged');
    } finally {
      webhooks.close();
    }
  });

  it('the chain holding these entries still verifies', async () => {
    const res = await stack.request('/v1/audit/verify', { key: victim.api_key });
    expect(res.status).toBe(200);
    const verdict = (await res.json()) as { intact: boolean; entries_checked: number };
    expect(verdict.intact).toBe(true);
    expect(verdict.entries_checked).toBeGreaterThanOrEqual(15);
  });
});
