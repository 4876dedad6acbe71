import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { databaseUrl, PG_ADMIN_URL } from '@cairn/testing';
import { databaseRole } from '../packages/config/src/index.js';
import { multipart, startStack, type Stack } from './support/stack.js';
import { SHARED_DIR } from '../packages/testing/src/shared.js';

/**
 * A peer's corpus: files from the C2PA reference implementation's own test suite, with the status Cairn
 * must give each (../shared/fixtures/c2pa-rs/EXPECTED.md). They check our reading of C2PA against c2pa-rs's.
 */
const CORPUS = `${SHARED_DIR}/fixtures/c2pa-rs`;
const run = promisify(execFile);

const EXPECTED: Array<[file: string, defaultList: string, customList: string]> = [
  ['CA.jpg', 'manifest_signer_untrusted', 'verified_manifest'],
  ['C.jpg', 'manifest_signer_untrusted', 'verified_manifest'],
  ['XCA.jpg', 'manifest_content_modified', 'manifest_content_modified'],
  ['E-sig-CA.jpg', 'manifest_tampered', 'manifest_tampered'],
  ['no_manifest.jpg', 'no_provenance', 'no_provenance'],
  ['cloud.jpg', 'manifest_unreachable', 'manifest_unreachable'],
  ['sample1.wav', 'no_provenance', 'no_provenance'],
];

let stack: Stack;
let enterprise: { api_key: string };

beforeAll(async () => {
  stack = await startStack(['watermark', 'signer', 'verifier', 'gateway'], { PUBLIC_VERIFY_PER_MINUTE: '1000' });
  const cli = new URL('../services/tenant/src/cli.ts', import.meta.url).pathname;
  // The CLI writes the tenant service's tables, so it connects as its own role (the sandbox's DATABASE_URL is the generic one).
  const tenantDatabaseUrl = databaseUrl(PG_ADMIN_URL, stack.sandbox.databaseName, databaseRole('tenant'));
  const { stdout } = await run(
    process.execPath,
    ['--import', 'tsx', cli, 'admin', 'bootstrap', '--name', 'Corpus Enterprise', '--json'],
    { env: { ...process.env, ...stack.env, DATABASE_URL: tenantDatabaseUrl } },
  );
  enterprise = JSON.parse(stdout) as { api_key: string };
  const pem = await readFile(`${CORPUS}/test-trust-anchors.pem`, 'utf8');
  const certificates = pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  expect(certificates).toHaveLength(3);
  const res = await stack.request('/v1/trust-list', {
    method: 'POST',
    key: enterprise.api_key,
    json: {
      entries: certificates.map((certificate_pem, i) => ({ issuer_cn: `c2pa-rs test root ${i + 1}`, certificate_pem })),
    },
  });
  expect(res.status).toBe(200);
}, 120_000);
afterAll(() => stack?.stop());

// How fast each file comes back is measured by tools/bench/c2pa-corpus.ts, not asserted here.
async function verify(file: string, key?: string): Promise<{ status: string; confidence: number | null }> {
  const bytes = await readFile(`${CORPUS}/${file}`);
  const res = await stack.request('/v1/verify', {
    method: 'POST',
    ...(key ? { key } : {}),
    body: multipart({}, { field: 'file', bytes, name: file }),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as { status: string; confidence: number | null };
}

describe('the c2pa-rs corpus through POST /v1/verify', () => {
  it.each(EXPECTED)('%s → %s with the default trust list', async (file, expected) => {
    expect((await verify(file)).status).toBe(expected);
  });

  it.each(EXPECTED)(
    '%s → %s with the c2pa-rs test roots as an enterprise trust list',
    async (file, _default, expected) => {
      expect((await verify(file, enterprise.api_key)).status).toBe(expected);
    },
  );

  it('answers the deeply nested MP4 cleanly and stays up', async () => {
    const bytes = await readFile(`${CORPUS}/nested_moov_1000.mp4`);
    const res = await stack.request('/v1/verify', {
      method: 'POST',
      body: multipart({}, { field: 'file', bytes, name: 'n.mp4' }),
    });
    expect(res.status).toBeLessThan(500);
    expect((await verify('no_manifest.jpg')).status).toBe('no_provenance');
  });

  it('refuses a custom trust list to a non-enterprise tenant (403)', async () => {
    const { onboard } = await import('./support/stack.js');
    const developer = await onboard(stack, 'developer');
    const res = await stack.request('/v1/trust-list', {
      method: 'POST',
      key: developer.api_key,
      json: { entries: [{ issuer_cn: 'x', certificate_pem: 'x' }] },
    });
    expect(res.status).toBe(403);
  });

  it('refuses a trust list entry that is not a certificate', async () => {
    const res = await stack.request('/v1/trust-list', {
      method: 'POST',
      key: enterprise.api_key,
      json: {
        entries: [{ issuer_cn: 'x', certificate_pem: '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----' }],
      },
    });
    expect(res.status).toBe(400);
  });

  // Last: it removes the list the tests above use.
  it('DELETE /v1/trust-list puts the tenant back on the default list', async () => {
    const cleared = await stack.request('/v1/trust-list', { method: 'DELETE', key: enterprise.api_key });
    expect(cleared.status).toBe(204);
    const list = (await (await stack.request('/v1/trust-list', { key: enterprise.api_key })).json()) as {
      source: string;
    };
    expect(list.source).toBe('default');
    for (const [file, expected] of EXPECTED)
      expect([file, (await verify(file, enterprise.api_key)).status]).toEqual([file, expected]);
    // Idempotent: nothing left to remove is done all the same.
    expect((await stack.request('/v1/trust-list', { method: 'DELETE', key: enterprise.api_key })).status).toBe(204);
  });
});
