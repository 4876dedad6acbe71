import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createHash, X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { waitFor } from '@cairn/testing';
import { makeTestCredential, type TestCredential } from '../services/signer/test/c2pa-fixtures.js';
import { PublishedTrustList, parseTrustSource } from '../services/verifier/src/adapters/trust-sources.js';
import { signedElsewhere } from './support/signed-elsewhere.js';
import { multipart, startStack, type Stack } from './support/stack.js';
import { SHARED_DIR } from '../packages/testing/src/shared.js';

// The default trust list (docs/decisions/0028-default-trust-list.md) is Cairn's CA plus the official C2PA lists,
// shipped as data and replaceable without a release (a file, or a URL refreshed on a schedule); GET /v1/trust-list
// shows it.

const SHIPPED = new URL('../services/verifier/src/trust-lists/C2PA-TRUST-LIST.pem', import.meta.url);
const SHIPPED_TSA = new URL('../services/verifier/src/trust-lists/C2PA-TSA-TRUST-LIST.pem', import.meta.url);
const SHIPPED_INTERIM = new URL('../services/verifier/src/trust-lists/INTERIM-TRUST-LIST.pem', import.meta.url);
const PHOTO = `${SHARED_DIR}/fixtures/photos/astronaut.png`;

type TrustListBody = {
  source: string;
  count: number;
  published_lists?: { c2pa_trust_list: string; c2pa_tsa_trust_list: string; interim_trust_list?: string };
  lists: Array<{
    list: string;
    name: string;
    source: string;
    issued_at?: string;
    sha256: string;
    certificates: number;
    loaded_at?: string;
    frozen?: boolean;
  }>;
  entries: Array<{ subject: string; origin: string; sha256_fingerprint: string; not_after: string }>;
};

/**
 * A published list read from `source` ('builtin', a path or a URL) with `builtin` as its shipped copy, refreshed each
 * minute, under `policy` (HTTPS only, no internal addresses, unless a test says otherwise).
 */
function publishedList(
  source: string,
  builtin: URL,
  options: { policy?: { httpsOnly: boolean; blockInternal: boolean; allowLoopback?: boolean }; name?: string } = {},
): PublishedTrustList {
  return new PublishedTrustList(parseTrustSource(source, builtin), {
    builtin,
    refreshMs: 60_000,
    policy: options.policy ?? { httpsOnly: true, blockInternal: true },
    ...(options.name === undefined ? {} : { shipped: { name: options.name } }),
  });
}

describe('the shipped C2PA lists', () => {
  it('hold the 30 signing CAs and 22 TSAs of the published lists, read as the builtin source', async () => {
    const c2pa = publishedList('builtin', SHIPPED);
    const tsa = publishedList('builtin', SHIPPED_TSA);
    expect(await c2pa.pems()).toHaveLength(30);
    expect(await tsa.pems()).toHaveLength(22);
    expect(c2pa.origin()).toBe('shipped with Cairn');
  });

  it('the shipped interim list holds its 18 roots, none of them on the official list', async () => {
    const interim = publishedList('builtin', SHIPPED_INTERIM, { name: 'Interim Trust List (frozen)' });
    const official = publishedList('builtin', SHIPPED);
    const fingerprints = (pems: string[]) => pems.map((p) => new X509Certificate(p).fingerprint256);
    const roots = fingerprints(await interim.pems());
    expect(roots).toHaveLength(18);
    const officialRoots = new Set(fingerprints(await official.pems()));
    expect(roots.filter((f) => officialRoots.has(f))).toEqual([]);
    expect(interim.loaded()).toMatchObject({
      name: 'Interim Trust List (frozen)',
      source: 'shipped with Cairn',
      certificates: 18,
      sha256: createHash('sha256')
        .update(await readFile(SHIPPED_INTERIM))
        .digest('hex'),
    });
  });

  it('the C2PA JSON list (List of Trusted Entities) is read with its issue date and the SHA-256 of its text', async () => {
    const path = `${SHARED_DIR}/trust/C2PA-TRUST-LIST.json`;
    const fromJson = publishedList(path, SHIPPED);
    const fromPem = publishedList('builtin', SHIPPED);
    const fingerprints = (pems: string[]) => pems.map((p) => new X509Certificate(p).fingerprint256).sort();
    // The same 30 certificates as the PEM bundle the programme made from it.
    expect(fingerprints(await fromJson.pems())).toEqual(fingerprints(await fromPem.pems()));
    expect(fromJson.loaded()).toMatchObject({
      name: 'C2PA Trust List',
      issuedAt: '2026-08-05T00:11:39.000Z',
      nextUpdate: '2027-08-05T00:11:39.000Z',
      source: `file ${path}`,
      certificates: 30,
      sha256: createHash('sha256')
        .update(await readFile(path))
        .digest('hex'),
    });
  });

  it('a URL that never answers falls back to the shipped copy, and says so', async () => {
    const list = publishedList('http://127.0.0.1:1/list.pem', SHIPPED, {
      policy: { httpsOnly: false, blockInternal: true, allowLoopback: true },
    });
    expect(await list.pems()).toHaveLength(30);
    expect(list.origin()).toContain('unreachable');
  });
});

describe('a configured trust list replaces the shipped one without a release', () => {
  let stack: Stack;
  let server: Server;
  let served = '';
  let dir: string;
  let viaUrl: TestCredential;
  let viaFile: TestCredential;
  let later: TestCredential;
  let photo: Buffer;

  beforeAll(async () => {
    [viaUrl, viaFile, later] = await Promise.all([
      makeTestCredential({ commonName: 'Listed By URL' }),
      makeTestCredential({ commonName: 'Listed By File' }),
      makeTestCredential({ commonName: 'Listed Later' }),
    ]);
    served = viaUrl.caCertPem;
    server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/x-pem-file' }).end(served));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    dir = await mkdtemp(join(tmpdir(), 'cairn-trust-'));
    await writeFile(join(dir, 'tsa.pem'), viaFile.caCertPem);
    stack = await startStack(['watermark', 'signer', 'verifier', 'gateway'], {
      PUBLIC_VERIFY_PER_MINUTE: '1000',
      C2PA_TRUST_LIST: `http://127.0.0.1:${(server.address() as AddressInfo).port}/c2pa.pem`,
      C2PA_TSA_TRUST_LIST: join(dir, 'tsa.pem'),
      TRUST_LIST_REFRESH_SECONDS: '1',
    });
    photo = await sharp(await readFile(PHOTO))
      .resize(512)
      .jpeg({ quality: 90 })
      .toBuffer();
  }, 120_000);
  afterAll(async () => {
    await stack?.stop();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await rm(dir, { recursive: true, force: true });
  });

  const signedBy = (credential: TestCredential) => signedElsewhere(photo, credential);
  const publicStatus = async (bytes: Buffer) => {
    const res = await stack.request('/v1/verify', {
      method: 'POST',
      body: multipart({}, { field: 'file', bytes, name: 'f.jpg' }),
    });
    return ((await res.json()) as { status: string }).status;
  };
  const trustList = async () => (await (await stack.request('/v1/trust-list')).json()) as TrustListBody;

  it('GET /v1/trust-list shows the default list with where each part comes from', async () => {
    const list = await trustList();
    expect(list.source).toBe('default');
    expect(list.entries.filter((e) => e.origin === 'cairn')).toHaveLength(1);
    expect(list.entries.filter((e) => e.origin === 'c2pa').map((e) => e.sha256_fingerprint)).toEqual([
      new X509Certificate(viaUrl.caCertPem).fingerprint256,
    ]);
    expect(list.entries.filter((e) => e.origin === 'c2pa_tsa').map((e) => e.sha256_fingerprint)).toEqual([
      new X509Certificate(viaFile.caCertPem).fingerprint256,
    ]);
    expect(list.published_lists?.c2pa_trust_list).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/c2pa\.pem$/);
    expect(list.published_lists?.c2pa_tsa_trust_list).toBe(`file ${join(dir, 'tsa.pem')}`);
    expect(list.published_lists?.interim_trust_list).toBe('shipped with Cairn');
    // Each list with the snapshot in force: what a validation report names when that list decides.
    const lists = new Map(list.lists.map((l) => [l.list, l]));
    expect(lists.get('cairn')).toMatchObject({ source: 'signer', certificates: 1 });
    expect(lists.get('c2pa')).toMatchObject({
      source: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/c2pa\.pem$/),
      certificates: 1,
      sha256: createHash('sha256').update(served).digest('hex'),
      loaded_at: expect.any(String),
    });
    expect(lists.get('c2pa_tsa')).toMatchObject({
      source: `file ${join(dir, 'tsa.pem')}`,
      sha256: createHash('sha256')
        .update(await readFile(join(dir, 'tsa.pem')))
        .digest('hex'),
    });
    expect(lists.get('interim')).toMatchObject({
      name: 'Interim Trust List (frozen)',
      source: 'shipped with Cairn',
      issued_at: '2025-08-28T17:49:44.000Z',
      certificates: 18,
      frozen: true,
      sha256: createHash('sha256')
        .update(await readFile(SHIPPED_INTERIM))
        .digest('hex'),
    });
    expect(list.entries.filter((e) => e.origin === 'interim')).toHaveLength(18);
    expect(list.count).toBe(list.entries.length);
    for (const entry of list.entries) expect(entry.sha256_fingerprint).toMatch(/^([0-9A-F]{2}:){31}[0-9A-F]{2}$/);
  });

  it('files signed under the listed CAs verify as trusted; an unlisted one does not', async () => {
    expect(await publicStatus(await signedBy(viaUrl))).toBe('verified_manifest');
    expect(await publicStatus(await signedBy(viaFile))).toBe('verified_manifest');
    expect(await publicStatus(await signedBy(later))).toBe('manifest_signer_untrusted');
  });

  it('a URL list is fetched again on its schedule: a CA added there is trusted without a restart', async () => {
    const file = await signedBy(later);
    served = later.caCertPem;
    await waitFor(
      'the refreshed list',
      async () => ((await publicStatus(file)) === 'verified_manifest' ? true : undefined),
      20_000,
      300,
    );
    // ...and the CA dropped from it is no longer trusted.
    expect(await publicStatus(await signedBy(viaUrl))).toBe('manifest_signer_untrusted');
  }, 30_000);
});
