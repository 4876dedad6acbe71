import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash, generateKeyPairSync, randomBytes, X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import sharp from 'sharp';
import { makeTestCredential, type TestCredential } from '../services/signer/test/c2pa-fixtures.js';
import { multipart, onboard, onboardEnterprise, startStack, type Stack } from './support/stack.js';
import { settledUsage } from './support/usage.js';
import { proofOfPossession, signingEndpoint, type SigningEndpoint } from './support/byok.js';
import { SHARED_DIR } from '../packages/testing/src/shared.js';

// docs/decisions/0026-byok-remote-signing-endpoint.md: an Enterprise tenant signs with a key it holds (BYOK). Cairn
// sends the bytes to be signed to the tenant's endpoint with an HMAC, never sees the key, meters byok_sign on top of
// the modality meter, and a failing endpoint is a 503 within a bounded time.
// docs/decisions/0027-byok-proves-possession.md, tried as the attacker: a tenant that does not hold the key (another
// organisation's published chain, an endpoint answering with another key, a proof made for another tenant) gets nothing
// signed, stored or billed, a chain passing for Cairn's own signing identity is refused, and pages say whose key
// signed.

let stack: Stack;
let enterprise: { tenant_id: string; api_key: string };
let credential: TestCredential;
let photo: Buffer;
let endpoint: SigningEndpoint;

/** The fields a 400 problem names. */
async function refusedFields(res: Response): Promise<string[]> {
  const problem = (await res.json()) as { errors?: Array<{ path: string }> };
  return (problem.errors ?? []).map((e) => e.path);
}

/** The ids of a tenant's registered credentials. */
async function credentialsOf(key: string): Promise<string[]> {
  const res = await stack.request('/v1/signing-credentials', { key });
  return ((await res.json()) as { data: Array<{ credential_id: string }> }).data.map((c) => c.credential_id);
}

/** Rows a query counts in the sandbox's database (the signer's and watermark service's own records). */
async function count(sql: string, params: unknown[]): Promise<number> {
  const admin = await stack.sandbox.adminClient();
  try {
    const { rows } = await admin.query<{ n: string }>(sql, params);
    return Number(rows[0]!.n);
  } finally {
    await admin.end();
  }
}

const makeEnterprise = () => onboardEnterprise(stack);

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

  it('registers a credential only with proof of possession: its chain and endpoint, the HMAC secret shown once', async () => {
    const fields = { certificate_chain_pem: credential.certChainPem, endpoint_url: endpoint.url };
    const missing = await register(enterprise.api_key, fields);
    expect(missing.status).toBe(400);
    const missingProblem = (await missing.json()) as { detail: string; errors: Array<{ path: string }> };
    expect(missingProblem.errors.map((e) => e.path)).toContain('proof_of_possession');
    expect(missingProblem.detail).toContain('cairn-byok-registration');
    const res = await register(enterprise.api_key, {
      ...fields,
      description: 'newsroom HSM',
      // DER, as many HSMs answer it; the signs below get raw r‖s.
      proof_of_possession: proofOfPossession(
        enterprise.tenant_id,
        credential.leafCertPem,
        credential.privateKeyPem,
        'der',
      ),
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

  it('signs with the tenant’s key: the verdict and the public page say it was the tenant’s own key, and byok_sign is metered on top', async () => {
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
    ).json()) as {
      status: string;
      asset_id?: string;
      claims: { signed_by: string; signing_key?: string };
      does_not_prove: string[];
    };
    expect(verified.status).toBe('verified_manifest_and_watermark_match');
    expect(verified.claims.signed_by).toBe("Acme Newsroom — Newsroom Signer (the tenant's own key)");
    expect(verified.claims.signing_key).toBe('tenant');
    expect(verified.does_not_prove.join(' ')).toContain('signing tenant’s own key');
    // The public page (default trust list: the tenant's CA is unknown there) says whose key it was, as page text.
    const page = await (await stack.request(`/v/${asset_id}`)).text();
    expect(page).toContain('Acme Newsroom — Newsroom Signer (the tenant&#39;s own key)');
    expect(page).toContain('Signed with the tenant’s own key (bring your own key), not Cairn’s.');
    expect(page).not.toContain('data-status="manifest_tampered"');
    // The tenant-signed record names the asset because the store is byte for byte the one Cairn kept.
    expect(verified.asset_id).toBe(asset_id);
    const after = await usage(enterprise.api_key);
    expect(after).toEqual({ byok_sign: before.byok_sign + 1, image_sign: before.image_sign + 1 });
  }, 60_000);

  it('an endpoint answering with another key: 503, no asset recorded or served, nothing metered', async () => {
    const before = await usage(enterprise.api_key);
    const assetsBefore = await count('select count(*) as n from signer.assets where tenant_id = $1', [
      enterprise.tenant_id,
    ]);
    endpoint.mode = 'wrong_key';
    const requests = endpoint.requests;
    const forged = await signWith(enterprise.api_key, { signing_credential: credentialId });
    endpoint.mode = 'sign';
    expect(forged.status).toBe(503);
    const problem = (await forged.json()) as { code: string; detail: string };
    expect(problem.code).toBe('cairn.signer.unavailable');
    expect(problem.detail).toMatch(
      /signature your endpoint returned does not verify against the registered certificate/i,
    );
    expect(endpoint.requests).toBeGreaterThan(requests);
    expect(await usage(enterprise.api_key)).toEqual(before);
    expect(await count('select count(*) as n from signer.assets where tenant_id = $1', [enterprise.tenant_id])).toBe(
      assetsBefore,
    );
    // The watermark is embedded before the signature is asked for: whatever asset a mark names that was never
    // recorded has neither a page nor content.
    const admin = await stack.sandbox.adminClient();
    let unrecorded: string[];
    try {
      unrecorded = (
        await admin.query<{ asset_id: string }>(
          `select m.asset_id from watermark.marks m where m.tenant_id = $1
             and not exists (select 1 from signer.assets a where a.asset_id = m.asset_id)`,
          [enterprise.tenant_id],
        )
      ).rows.map((r) => r.asset_id);
    } finally {
      await admin.end();
    }
    for (const assetId of unrecorded) {
      expect([assetId, (await stack.request(`/v/${assetId}`)).status]).toEqual([assetId, 404]);
      const content = await stack.request(`/v1/assets/${assetId}/content`, { key: enterprise.api_key });
      expect([assetId, content.status]).toEqual([assetId, 404]);
    }
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
    const proof = proofOfPossession(enterprise.tenant_id, credential.leafCertPem, credential.privateKeyPem);
    for (const url of [
      'http://10.1.2.3/sign',
      'http://169.254.169.254/latest',
      'http://[fd00::1]/sign',
      'ftp://example.com/sign',
    ]) {
      const res = await register(enterprise.api_key, {
        certificate_chain_pem: credential.certChainPem,
        endpoint_url: url,
        proof_of_possession: proof,
      });
      expect([url, res.status, await refusedFields(res)]).toEqual([url, 400, ['endpoint_url']]);
    }
    const caAsLeaf = await register(enterprise.api_key, {
      certificate_chain_pem: credential.caCertPem,
      endpoint_url: endpoint.url,
      proof_of_possession: proof,
    });
    expect([caAsLeaf.status, await refusedFields(caAsLeaf)]).toEqual([400, ['certificate_chain_pem']]);
    const broken = await makeTestCredential();
    const mismatched = await register(enterprise.api_key, {
      certificate_chain_pem: credential.leafCertPem + broken.caCertPem,
      endpoint_url: endpoint.url,
      proof_of_possession: proof,
    });
    expect([mismatched.status, await refusedFields(mismatched)]).toEqual([400, ['certificate_chain_pem']]);
  });

  it('refuses another organisation’s published chain registered without its key', async () => {
    const attacker = await makeEnterprise();
    // The victim's certificates are public (every manifest it signs carries them); its key is not.
    const victim = await makeTestCredential({ commonName: 'Photo Desk', organization: 'Northwind Press Agency' });
    const ownKey = generateKeyPairSync('ec', { namedCurve: 'prime256v1' }).privateKey.export({
      type: 'pkcs8',
      format: 'pem',
    }) as string;
    const attempts: Record<string, string> = {
      'signed with the attacker’s own key': proofOfPossession(attacker.tenant_id, victim.leafCertPem, ownKey),
      'random bytes': randomBytes(64).toString('base64'),
      'not base64': 'MEUCIQ!!not-a-signature',
    };
    for (const [what, proof] of Object.entries(attempts)) {
      const res = await register(attacker.api_key, {
        certificate_chain_pem: victim.certChainPem,
        endpoint_url: endpoint.url,
        proof_of_possession: proof,
      });
      expect([what, res.status]).toEqual([what, 400]);
      const problem = (await res.json()) as { code: string; detail: string; errors: Array<{ path: string }> };
      expect(problem.code).toBe('cairn.validation.invalid_body');
      expect(problem.errors.map((e) => e.path)).toEqual(['proof_of_possession']);
      // The exact bytes to sign, for this tenant and this leaf.
      const leafSha256 = createHash('sha256').update(new X509Certificate(victim.leafCertPem).raw).digest('hex');
      expect(problem.detail).toContain(JSON.stringify(`cairn-byok-registration\n${attacker.tenant_id}\n${leafSha256}`));
    }
    expect(await credentialsOf(attacker.api_key)).toEqual([]);
  }, 60_000);

  it('refuses a proof made for another tenant: a registration cannot be replayed elsewhere', async () => {
    const attacker = await makeEnterprise();
    // The proof the honest tenant registered with (seen in a log, a proxy, a leaked request) names that tenant.
    const replayed = proofOfPossession(enterprise.tenant_id, credential.leafCertPem, credential.privateKeyPem);
    const res = await register(attacker.api_key, {
      certificate_chain_pem: credential.certChainPem,
      endpoint_url: endpoint.url,
      proof_of_possession: replayed,
    });
    expect([res.status, await refusedFields(res)]).toEqual([400, ['proof_of_possession']]);
    expect(await credentialsOf(attacker.api_key)).toEqual([]);
  }, 60_000);

  it('refuses chains that pass for Cairn’s own signing identity, not every name with “cairn” in it', async () => {
    const impostors: Array<{ organization: string; commonName: string }> = [
      { organization: 'Cairn', commonName: 'Cairn Signing 1' },
      { organization: 'Acme Newsroom', commonName: 'Cairn Signing 1' },
      { organization: 'Cairn', commonName: 'Newsroom Signer' },
      { organization: 'CAIRN', commonName: 'Newsroom Signer' },
      // A Cyrillic а, read as "Cairn" by anyone looking at the page (and a zero-width space below).
      { organization: 'C\u0430irn', commonName: 'Newsroom Signer' },
      { organization: 'Acme Newsroom', commonName: 'cairn  root-ca' },
      { organization: 'Acme Newsroom', commonName: 'Cairn Intermediate\u200b CA' },
      { organization: 'Acme Newsroom', commonName: 'Cairn OCSP Responder 3' },
    ];
    for (const name of impostors) {
      const impostor = await makeTestCredential(name);
      const res = await register(enterprise.api_key, {
        certificate_chain_pem: impostor.certChainPem,
        endpoint_url: endpoint.url,
        // The impostor holds its own key: possession is not the question here, the name is.
        proof_of_possession: proofOfPossession(enterprise.tenant_id, impostor.leafCertPem, impostor.privateKeyPem),
      });
      expect([name, res.status, await refusedFields(res)]).toEqual([name, 400, ['certificate_chain_pem']]);
    }
    const before = (await credentialsOf(enterprise.api_key)).length;
    // Names Cairn's own certificates do not use are the tenant's business.
    const neighbour = await makeTestCredential({
      organization: 'Cairn Valley Gazette',
      commonName: 'Cairnhill Photo Desk',
    });
    const res = await register(enterprise.api_key, {
      certificate_chain_pem: neighbour.certChainPem,
      endpoint_url: endpoint.url,
      proof_of_possession: proofOfPossession(enterprise.tenant_id, neighbour.leafCertPem, neighbour.privateKeyPem),
    });
    expect(res.status).toBe(201);
    const { credential_id } = (await res.json()) as { credential_id: string };
    expect((await credentialsOf(enterprise.api_key)).length).toBe(before + 1);
    expect(
      (await stack.request(`/v1/signing-credentials/${credential_id}`, { method: 'DELETE', key: enterprise.api_key }))
        .status,
    ).toBe(204);
  }, 60_000);

  it('is Enterprise only, and one tenant cannot sign with another’s credential', async () => {
    const developer = await onboard(stack, 'developer');
    expect(
      (
        await register(developer.api_key, {
          certificate_chain_pem: credential.certChainPem,
          endpoint_url: endpoint.url,
          proof_of_possession: proofOfPossession(developer.tenant_id, credential.leafCertPem, credential.privateKeyPem),
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
