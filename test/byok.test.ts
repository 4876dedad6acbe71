import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHmac, sign as ecdsaSign, timingSafeEqual } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';
import { makeTestCredential, type TestCredential } from '../services/signer/test/c2pa-fixtures.js';
import { multipart, onboard, startStack, type Stack } from './support/stack.js';
import { settledUsage } from './support/usage.js';
import { SHARED_DIR } from '../packages/testing/src/shared.js';

// Issue #15 item 4: an Enterprise tenant signs with a key it holds (BYOK). Cairn sends the bytes to be signed to
// the tenant's endpoint with an HMAC, never sees the key, meters byok_sign on top of the modality meter, and a
// failing endpoint is a 503 within a bounded time.

let stack: Stack;
let enterprise: { tenant_id: string; api_key: string };
let credential: TestCredential;
let photo: Buffer;
let endpoint: {
  url: string;
  close(): Promise<void>;
  requests: number;
  badMacs: number;
  secret: string;
  mode: 'sign' | 'fail';
};

/** The tenant's own signing service: checks Cairn's HMAC, signs ES256 with the key only it holds. */
async function signingEndpoint(key: string): Promise<typeof endpoint> {
  const state = { requests: 0, badMacs: 0, secret: '', mode: 'sign' as 'sign' | 'fail' };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      state.requests += 1;
      const body = Buffer.concat(chunks);
      const expected = Buffer.from(
        `sha256=${createHmac('sha256', state.secret)
          .update(`${String(req.headers['cairn-timestamp'])}.`)
          .update(body)
          .digest('hex')}`,
      );
      const given = Buffer.from(String(req.headers['cairn-signature'] ?? ''));
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
        state.badMacs += 1;
        return void res.writeHead(401).end();
      }
      if (state.mode === 'fail') return void res.writeHead(500).end();
      const { to_be_signed } = JSON.parse(body.toString('utf8')) as { to_be_signed: string };
      const signature = ecdsaSign('sha256', Buffer.from(to_be_signed, 'base64'), { key, dsaEncoding: 'ieee-p1363' });
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ signature: signature.toString('base64') }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return Object.assign(state, {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/sign`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  });
}

async function makeEnterprise(): Promise<{ tenant_id: string; api_key: string }> {
  const tenant = await onboard(stack, 'free');
  const admin = await stack.sandbox.adminClient();
  try {
    await admin.query(`update tenant.tenants set plan = 'enterprise', rate_limit_rps = 100 where tenant_id = $1`, [
      tenant.tenant_id,
    ]);
  } finally {
    await admin.end();
  }
  return tenant;
}

const register = (key: string, body: Record<string, unknown>) =>
  stack.request('/v1/signing-credentials', { method: 'POST', key, json: body });
const signWith = (key: string, fields: Record<string, string>) =>
  stack.request('/v1/sign', {
    method: 'POST',
    key,
    headers: { 'idempotency-key': crypto.randomUUID() },
    body: multipart({ recipe: 'image-genai-v1', ...fields }, { field: 'asset', bytes: photo, name: 'p.jpg' }),
  });
/** Used this month per meter; a contract meter never used yet is not listed, so it reads 0. */
const usage = async (key: string) => {
  const { meters } = await settledUsage(stack, key);
  return { byok_sign: meters.byok_sign?.used ?? 0, image_sign: meters.image_sign?.used ?? 0 };
};

beforeAll(async () => {
  stack = await startStack(['watermark', 'signer', 'verifier', 'gateway'], { BYOK_SIGN_TIMEOUT_MS: '2000' });
  enterprise = await makeEnterprise();
  credential = await makeTestCredential({ commonName: 'Newsroom Signer', organization: 'Acme Newsroom' });
  endpoint = await signingEndpoint(credential.privateKeyPem);
  photo = await sharp(await readFile(`${SHARED_DIR}/fixtures/photos/chelsea.png`))
    .resize(640)
    .jpeg({ quality: 90 })
    .toBuffer();
  // The tenant trusts its own CA for its verifies; the public default list does not know it.
  const trust = await stack.request('/v1/trust-list', {
    method: 'POST',
    key: enterprise.api_key,
    json: { entries: [{ issuer_cn: 'Cairn Test Root CA', certificate_pem: credential.caCertPem }] },
  });
  expect(trust.status).toBe(200);
}, 120_000);
afterAll(async () => {
  await endpoint?.close();
  await stack?.stop();
});

describe('bring your own key', () => {
  let credentialId: string;

  it('registers a credential: its chain and endpoint, the HMAC secret shown once', async () => {
    const res = await register(enterprise.api_key, {
      certificate_chain_pem: credential.certChainPem,
      endpoint_url: endpoint.url,
      description: 'newsroom HSM',
    });
    expect(res.status).toBe(201);
    const body = (await res.json()) as {
      credential_id: string;
      hmac_secret: string;
      subject: string;
      endpoint_url: string;
    };
    expect(body.credential_id).toMatch(/^sc_/);
    expect(body.subject).toContain('Acme Newsroom');
    expect(body.hmac_secret).toMatch(/^bks_/);
    endpoint.secret = body.hmac_secret;
    credentialId = body.credential_id;
    const listed = (await (await stack.request('/v1/signing-credentials', { key: enterprise.api_key })).json()) as {
      data: Array<Record<string, unknown>>;
    };
    expect(listed.data).toEqual([expect.objectContaining({ credential_id: credentialId, endpoint_url: endpoint.url })]);
    expect(listed.data[0]).not.toHaveProperty('hmac_secret');
  });

  it('signs with the tenant’s key: the verifier names the tenant as signer, and byok_sign is metered on top', async () => {
    const before = await usage(enterprise.api_key);
    const res = await signWith(enterprise.api_key, { signing_credential: credentialId });
    expect(res.status).toBe(200);
    expect(endpoint.requests).toBeGreaterThanOrEqual(1);
    expect(endpoint.badMacs).toBe(0);
    const { asset_id } = (await res.json()) as { asset_id: string };
    const bytes = Buffer.from(
      await (await stack.request(`/v1/assets/${asset_id}/content`, { key: enterprise.api_key })).arrayBuffer(),
    );
    const verified = (await (
      await stack.request('/v1/verify', {
        method: 'POST',
        key: enterprise.api_key,
        body: multipart({}, { field: 'file', bytes, name: 'f.jpg' }),
      })
    ).json()) as { status: string; asset_id?: string; claims: { signed_by: string } };
    expect(verified.status).toBe('verified_manifest_and_watermark_match');
    expect(verified.claims.signed_by).toContain('Acme Newsroom');
    // The tenant-signed record names the asset because the store is byte for byte the one Cairn kept.
    expect(verified.asset_id).toBe(asset_id);
    const after = await usage(enterprise.api_key);
    expect(after).toEqual({ byok_sign: before.byok_sign + 1, image_sign: before.image_sign + 1 });
  }, 60_000);

  it('an endpoint that fails or is gone: 503 cairn.signer.unavailable, nothing metered', async () => {
    const before = await usage(enterprise.api_key);
    endpoint.mode = 'fail';
    const failing = await signWith(enterprise.api_key, { signing_credential: credentialId });
    expect(failing.status).toBe(503);
    expect(((await failing.json()) as { code: string }).code).toBe('cairn.signer.unavailable');
    endpoint.mode = 'sign';
    const after = await usage(enterprise.api_key);
    expect(after).toEqual(before);
  }, 60_000);

  it('refuses endpoints at internal addresses and chains that cannot sign ES256', async () => {
    for (const url of [
      'http://10.1.2.3/sign',
      'http://169.254.169.254/latest',
      'http://[fd00::1]/sign',
      'ftp://example.com/sign',
    ]) {
      const res = await register(enterprise.api_key, {
        certificate_chain_pem: credential.certChainPem,
        endpoint_url: url,
      });
      expect([url, res.status]).toEqual([url, 400]);
    }
    const caAsLeaf = await register(enterprise.api_key, {
      certificate_chain_pem: credential.caCertPem,
      endpoint_url: endpoint.url,
    });
    expect(caAsLeaf.status).toBe(400);
    const broken = await makeTestCredential();
    const mismatched = await register(enterprise.api_key, {
      certificate_chain_pem: credential.leafCertPem + broken.caCertPem,
      endpoint_url: endpoint.url,
    });
    expect(mismatched.status).toBe(400);
  });

  it('is Enterprise only, and one tenant cannot sign with another’s credential', async () => {
    const developer = await onboard(stack, 'developer');
    expect(
      (
        await register(developer.api_key, {
          certificate_chain_pem: credential.certChainPem,
          endpoint_url: endpoint.url,
        })
      ).status,
    ).toBe(403);
    expect((await signWith(developer.api_key, { signing_credential: credentialId })).status).toBe(403);
    const other = await makeEnterprise();
    const requests = endpoint.requests;
    const res = await signWith(other.api_key, { signing_credential: credentialId });
    expect(res.status).toBe(400);
    expect(endpoint.requests).toBe(requests);
  }, 60_000);
});
